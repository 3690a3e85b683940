/**
 * Offline licensing on a license's page (CONTRACT section 11): the license files issued (checkouts and borrows), the
 * borrowed floating seats still held with a Return button (frees the seat at once), and when the license last
 * checked in against its check-in interval.
 */
import { call } from "./api/client";
import { ErrorBox, ListView, cell, useAction } from "./ui";
import { formatDate } from "./words";

type Row = Record<string, unknown>;

/** When the license last checked in, and whether that is within its template's checkInDays. */
export function CheckInFact({ license }: { license: Row }) {
  const last = typeof license["lastCheckIn"] === "string" ? license["lastCheckIn"] : undefined;
  const days = typeof license["checkInDays"] === "number" ? license["checkInDays"] : 0;
  const overdue = last !== undefined && days > 0 && Date.now() - Date.parse(last) > days * 86_400_000;
  return (
    <p class="check-in" data-testid="last-check-in">
      Last check-in: {last ? formatDate(last) : "never"}
      {days > 0 ? ` (every ${days} days${overdue ? ", overdue" : ""})` : ""}
    </p>
  );
}

/** The license's files; a borrow still held can be returned by the staff who may write the license. */
export function LicenseFiles({ licenseId, write, reload }: { licenseId: string; write: boolean; reload: number }) {
  const action = useAction();
  const path = `/v1/licenses/${encodeURIComponent(licenseId)}/files`;
  return (
    <>
      <ListView
        title="License files and borrowed seats"
        path={path}
        reload={reload}
        filterHint='machineId.StartsWith("PC")'
        columns={[
          { key: "issuedAt", label: "Issued" },
          { key: "machineId", label: "Machine" },
          { key: "clientId", label: "Client" },
          { key: "encrypted", label: "Encrypted" },
          { key: "expiresAt", label: "Valid until" },
          {
            key: "borrowUntil",
            label: "Borrowed seat",
            render: (r) =>
              r["borrowUntil"]
                ? r["borrowed"]
                  ? `held until ${cell(r["borrowUntil"])}`
                  : r["returnedAt"]
                    ? `returned ${cell(r["returnedAt"])}`
                    : "ended"
                : "",
          },
        ]}
        actions={
          write
            ? (row, refresh) =>
                row["borrowed"] ? (
                  <button
                    type="button"
                    onClick={() =>
                      confirm(`Return the seat borrowed by ${String(row["machineId"])}?`) &&
                      action.run(async () => {
                        await call("POST", `${path}/${String(row["id"])}/return`);
                        refresh();
                      })
                    }
                  >
                    Return
                  </button>
                ) : null
            : undefined
        }
      />
      <ErrorBox error={action.error} />
    </>
  );
}
