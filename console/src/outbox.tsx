/**
 * The Outbox (issue 37, "mail and first steps"; Administrator only): every message the service made
 * (`GET /v1/email/outbox`). In development, without the EMAIL binding, this is the only place the license email and
 * the portal's sign-in link exist: each opens with its body rendered and its links clickable, and can be sent
 * again. A template can be previewed for a sample or a chosen license (`POST /v1/email/preview`), nothing sent.
 */
import { useState } from "preact/hooks";
import { call } from "./api/client";
import { all, useLoad } from "./load";
import { ErrorBox, ListView, Notice, useAction } from "./ui";
import { formatDate } from "./words";

type Row = Record<string, unknown>;

/** A message to show: what the outbox or the preview answered. */
interface Message {
  to: string;
  subject: string;
  body: string;
  isHtml: boolean;
  status?: string;
  createdAt?: string;
  /** Which template and license made a preview. */
  made?: string;
}

const URL_PATTERN = /(https?:\/\/[^\s<>"')]+)/g;

/** Plain text with each http(s) URL a link that opens in a new tab. */
function Linked({ text }: { text: string }) {
  const parts = text.split(URL_PATTERN);
  return (
    <pre class="mail-body">
      {parts.map((part, i) =>
        i % 2 === 1 ? (
          <a href={part} target="_blank" rel="noopener noreferrer">
            {part}
          </a>
        ) : (
          part
        ),
      )}
    </pre>
  );
}

/**
 * An HTML body in a sandboxed frame: no script runs, nothing of the console is reachable, and links open in a new
 * tab (the frame's base target), outside the sandbox.
 */
function HtmlBody({ html, title }: { html: string; title: string }) {
  return (
    <iframe
      class="mail-html"
      title={title}
      sandbox="allow-popups allow-popups-to-escape-sandbox"
      srcdoc={`<!doctype html><meta charset="utf-8"><base target="_blank"><style>body{font:15px system-ui,sans-serif;margin:8px}</style>${html}`}
    />
  );
}

export function MessageView({ message, label }: { message: Message; label: string }) {
  return (
    <section class="card message" aria-label={label}>
      <h3>{message.subject}</h3>
      <dl class="facts">
        <dt>To</dt>
        <dd>{message.to}</dd>
        {message.status ? (
          <>
            <dt>Status</dt>
            <dd>{message.status}</dd>
          </>
        ) : null}
        {message.createdAt ? (
          <>
            <dt>Written</dt>
            <dd>{formatDate(message.createdAt)}</dd>
          </>
        ) : null}
        {message.made ? (
          <>
            <dt>Made from</dt>
            <dd>{message.made}</dd>
          </>
        ) : null}
      </dl>
      {message.isHtml ? (
        <HtmlBody html={message.body} title={`Body of ${message.subject}`} />
      ) : (
        <Linked text={message.body} />
      )}
    </section>
  );
}

/** Renders a template for a sample license or a chosen one, and shows it. */
function Preview() {
  const templates = useLoad(() => all("/v1/resources", { filter: 'type == "EmailTemplate"', select: "id,name" }), []);
  const [shown, setShown] = useState<Message>();
  const action = useAction();
  return (
    <section class="card" aria-label="Preview a license email">
      <h3>Preview a license email</h3>
      <form
        class="inline wrap"
        onSubmit={(e) => {
          e.preventDefault();
          const data = new FormData(e.currentTarget);
          const licenseId = String(data.get("licenseId") ?? "").trim();
          const templateId = Number(data.get("templateId") || 0);
          void action.run(async () => {
            const res = await call("POST", "/v1/email/preview", {
              body: { ...(licenseId ? { licenseId } : {}), ...(templateId ? { templateId } : {}) },
            });
            setShown({
              to: String(res["to"]),
              subject: String(res["subject"]),
              body: String(res["body"]),
              isHtml: res["isHtml"] === true,
              made: `template "${String(res["templateName"])}" #${String(res["templateId"])}, ${
                res["licenseId"] ? `license ${String(res["licenseId"])}` : "a sample license"
              }`,
            });
          });
        }}
      >
        <label for="preview-license">License (empty: a sample)</label>
        <input id="preview-license" name="licenseId" placeholder="lic0A1B2C3D" />
        <label for="preview-template">Template</label>
        <select id="preview-template" name="templateId">
          <option value="">As sending picks it</option>
          {(templates.data ?? []).map((t: Row) => (
            <option value={String(t["id"])}>
              {String(t["name"])} #{String(t["id"])}
            </option>
          ))}
        </select>
        <button type="submit" disabled={action.busy}>
          Preview
        </button>
      </form>
      <p class="hint">
        Placeholders: <code>{"{CustomerName}"}</code>, <code>{"{ProductName}"}</code>, <code>{"{LicenseId}"}</code>,{" "}
        <code>{"{UserKey}"}</code>, <code>{"{ProductDownload}"}</code> (docs/email.md). Nothing is sent.
      </p>
      <ErrorBox error={action.error ?? templates.error} />
      {shown ? <MessageView message={shown} label="Preview" /> : null}
    </section>
  );
}

export function Outbox() {
  const info = useLoad(() => call("GET", "/v1/info"), []);
  const [open, setOpen] = useState<Row>();
  const [notice, setNotice] = useState<string>();
  const [reload, setReload] = useState(0);
  const action = useAction();
  const transport = (info.data?.["features"] as Row | undefined)?.["email"];
  return (
    <>
      <h2>Outbox</h2>
      <p class="hint" role="note">
        {transport === "binding"
          ? "Mail goes out through the EMAIL binding; a sent message's record keeps no secret it carried ([not kept])."
          : transport === "outbox"
            ? "No EMAIL binding: mail is not sent, it stays here (queued). Open a message to read it and follow its links."
            : ""}
      </p>
      <Notice text={notice} />
      <ErrorBox error={action.error} />
      {open ? (
        <MessageView
          label="Message"
          message={{
            to: String(open["to"]),
            subject: String(open["subject"]),
            body: String(open["body"] ?? ""),
            isHtml: open["isHtml"] === true,
            status: String(open["status"]),
            createdAt: String(open["createdAt"]),
          }}
        />
      ) : null}
      <ListView
        title="Messages"
        path="/v1/email/outbox"
        reload={reload}
        filterHint='to.Contains("@example.com") && status == "queued"'
        columns={[
          { key: "createdAt", label: "Written" },
          { key: "to", label: "To" },
          { key: "subject", label: "Subject" },
          { key: "status", label: "Status" },
          { key: "sentAt", label: "Sent" },
        ]}
        actions={(row, refresh) => (
          <>
            <button type="button" onClick={() => setOpen(row)} aria-pressed={open?.["id"] === row["id"]}>
              Open
            </button>
            <button
              type="button"
              onClick={() =>
                action.run(async () => {
                  const res = await call("POST", `/v1/email/outbox/${String(row["id"])}/resend`);
                  setNotice(
                    `Message ${String(row["id"])} ${String(res["status"])} again as message ${String(res["emailId"])}`,
                  );
                  setReload((n) => n + 1);
                  refresh();
                })
              }
            >
              Resend
            </button>
          </>
        )}
      />
      <Preview />
    </>
  );
}
