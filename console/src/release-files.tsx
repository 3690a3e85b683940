/**
 * A release's files in the console (CONTRACT section 15): the upload form and the list of downloads, which shows the service's refusal of a
 * build whose signer would strand the installs and lets an Administrator accept a deliberate change of certificate;
 * what the service found beside each uploaded file (its signer, Team ID or verified signature); and the changes of
 * signer accepted on the release.
 */
import { useState } from "preact/hooks";
import { ErrorBox, ListView, cell } from "./ui";
import { type UploadInput, UploadRefused, uploadArtifact } from "./upload";
import { formatDate, formatSize } from "./words";

type Row = Record<string, unknown>;

const PLATFORMS = ["win-x64", "win-arm64", "darwin-arm64", "darwin-x64", "linux-x64", "linux-arm64"];
const KINDS = ["installer", "zip", "delta", "blockmap", "package", "archive"];

/** Whether the service reads the signer of this file at upload (as src/updates/signing/identity.ts decides). */
function signedKind(fileName: string, platform: string): boolean {
  const name = fileName.toLowerCase();
  if (/\.(exe|msi|nupkg)$/.test(name)) return true;
  return name.endsWith(".zip") && platform.startsWith("darwin-");
}

/**
 * What the service found in an uploaded file: `signed by <CN>`, `Team ID <id>`, `signature verified`, or `unsigned`
 * for a Windows or macOS build without one; nothing for hosted files, whose bytes the service never read.
 */
export function signingNote(row: Row): string {
  if (row["sourceKind"] === "url") return "";
  const found: string[] = [];
  if (typeof row["signer"] === "string") found.push(`signed by ${row["signer"]}`);
  if (typeof row["teamId"] === "string") found.push(`Team ID ${row["teamId"]}`);
  if (row["signatureVerified"] === true) found.push("signature verified");
  if (found.length === 0 && signedKind(String(row["fileName"] ?? ""), String(row["platform"] ?? "")))
    found.push("unsigned");
  return found.join(", ");
}

/** A download's file name with what the service found beside it. */
export function FileWithSigner({ row }: { row: Row }) {
  const note = signingNote(row);
  return (
    <>
      {cell(row["fileName"])}
      {note ? (
        <>
          {" "}
          <small class={note === "unsigned" ? "halted-by" : "hint"} data-testid="signing">
            {note}
          </small>
        </>
      ) : null}
    </>
  );
}

/** A release's downloads, each file with what the service found in it. */
export function ReleaseDownloads({ path, reload }: { path: string; reload: number }) {
  return (
    <ListView
      title="Downloads"
      path={path}
      reload={reload}
      filterHint='platform == "win-x64"'
      columns={[
        { key: "platform", label: "Platform" },
        { key: "kind", label: "Kind" },
        // What the service found in an uploaded file (its signer, Team ID or verified signature) beside it.
        { key: "fileName", label: "File", render: (d) => <FileWithSigner row={d} /> },
        { key: "size", label: "Size" },
        { key: "sourceKind", label: "Stored" },
        // Counted by the service per artifact (delivered to the last byte); shown when the API returns it.
        {
          key: "downloadCount",
          label: "Downloads",
          render: (d) => (typeof d["downloadCount"] === "number" ? d["downloadCount"].toLocaleString() : ""),
        },
      ]}
    />
  );
}

interface SignerChange {
  platform: string;
  fileName: string;
  from: string[];
  to: string | null;
  by: string;
  at: string;
}

/** The changes of signer an Administrator accepted on this release: what was expected, what came, who, when. */
export function SignerChanges({ changes }: { changes: unknown }) {
  if (!Array.isArray(changes) || changes.length === 0) return null;
  return (
    <section class="card" aria-label="Signer changes">
      <h3>Signer changes</h3>
      <ul>
        {(changes as SignerChange[]).map((c) => (
          <li>
            Signer changed for {c.platform}: {c.from.join(" or ")} → {c.to ?? "unsigned"}, accepted by {c.by} on{" "}
            {formatDate(c.at)} <small class="hint">({c.fileName})</small>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** A refused upload an Administrator may send again with allowSignerChange=true. */
interface Refused {
  input: UploadInput;
  refusal: UploadRefused;
}

/** The upload form of a release's files, with its progress and the service's refusals. */
export function ArtifactUpload(props: {
  productId: number;
  releaseId: number;
  /** An Administrator: may accept a change of signer the service refused. */
  admin: boolean;
  onUploaded: (notice: string) => void;
}) {
  const [progress, setProgress] = useState<{ sent: number; total: number }>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [refused, setRefused] = useState<Refused>();
  const send = async (input: UploadInput) => {
    setBusy(true);
    setError(undefined);
    setRefused(undefined);
    setProgress({ sent: 0, total: input.file.size });
    try {
      const res = await uploadArtifact(input, (sent, total) => setProgress({ sent, total }));
      const size = Number(res["size"]);
      const changed = input.allowSignerChange ? "; the change of signer is recorded on the release" : "";
      props.onUploaded(
        `Uploaded ${input.file.name}: ${formatSize(size)} (${size.toLocaleString()} bytes), sha512 ${cell(res["sha512"])}${changed}`,
      );
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
      // A change of signer (or an unsigned build where a signer is expected) is an Administrator's to accept.
      if (e instanceof UploadRefused && (e.reason === "signerChanged" || e.reason === "unsigned"))
        setRefused({ input, refusal: e });
    } finally {
      setBusy(false);
    }
  };
  const accept = (r: Refused) => {
    const found = r.refusal.found ? `"${r.refusal.found}"` : "no signer";
    const expected = r.refusal.expected.map((e) => `"${e}"`).join(" or ");
    const question = `Accept ${r.input.file.name} signed by ${found} instead of ${expected}? Installs that check the old signer may refuse this update; the change is recorded on the release and in the audit trail.`;
    if (confirm(question)) void send({ ...r.input, allowSignerChange: true });
  };
  return (
    <form
      class="card form"
      aria-label="Upload an installer"
      onSubmit={(e) => {
        e.preventDefault();
        const data = new FormData(e.currentTarget);
        const file = data.get("file") as File | null;
        if (!file || file.size === 0) return setError("Choose a file to upload");
        const { productId, releaseId } = props;
        void send({
          productId,
          releaseId,
          platform: String(data.get("platform")),
          kind: String(data.get("kind")),
          file,
        });
      }}
    >
      <h3>Upload an installer</h3>
      <div class="grid">
        <div class="field">
          <label for="up-platform">Platform</label>
          <select id="up-platform" name="platform">
            {PLATFORMS.map((p) => (
              <option>{p}</option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="up-kind">Kind</label>
          <select id="up-kind" name="kind">
            {KINDS.map((k) => (
              <option>{k}</option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="up-file">File</label>
          <input id="up-file" name="file" type="file" required />
        </div>
      </div>
      {progress ? (
        <div class="progress">
          <label for="up-progress">Upload progress</label>
          <progress id="up-progress" max={progress.total} value={progress.sent} />
          <span aria-live="polite">{Math.floor((progress.sent / Math.max(1, progress.total)) * 100)} %</span>
        </div>
      ) : null}
      <ErrorBox error={error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          Upload
        </button>
        {refused && props.admin ? (
          <button type="button" disabled={busy} onClick={() => accept(refused)}>
            {refused.refusal.reason === "unsigned" ? "Accept it unsigned" : "Accept the new signer"}
          </button>
        ) : null}
      </div>
    </form>
  );
}
