/**
 * Import licenses (CONTRACT section 16; Administrator only): moving in from Keygen or a spreadsheet. The vendor picks
 * the source and its files (import-files.ts reads them), judges them with a dry run that writes nothing, and imports
 * them (`POST /v1/imports`); the report says what was (or would be) created, what was imported before, and each
 * refused row by line and field. An import of more than 1,000 rows runs off the request path: its progress is read
 * again every second (`GET /v1/imports/{importId}`) until it is done.
 */
import { useEffect, useState } from "preact/hooks";
import { api, errorText, must } from "./api/client";
import type { components } from "./api/schema";
import { type ChosenFile, byName, keygenData, missingLists } from "./import-files";
import { ErrorBox, Table, useAction } from "./ui";
import { formatCount, formatDate, formatSize } from "./words";

export type ImportReport = components["schemas"]["Import"];
type Source = ImportReport["source"];
type Problem = ImportReport["errors"][number];

/** How often a running import's progress is read again. */
const POLL_MS = 1_000;
/** The columns a CSV file may have, in the order the service documents them (src/imports/csv.ts). */
const CSV_COLUMNS = "legacyKey, product, customerEmail, customerName, edition, expireDate, maxActivations, machines";

const SOURCES: { value: Source; label: string }[] = [
  { value: "keygen", label: "Keygen export (JSON)" },
  { value: "csv", label: "CSV file" },
];

/** The chosen files, read and ready to send, with what each was taken as. */
interface Prepared {
  source: Source;
  data: unknown;
  names: string[];
  taken: string[];
  problems: string[];
}

/** Reads the chosen files as the source wants them. */
async function prepare(source: Source, chosen: File[]): Promise<Prepared> {
  const files: ChosenFile[] = await Promise.all(chosen.map(async (f) => ({ name: f.name, text: await f.text() })));
  const names = byName(files).map((f) => f.name);
  if (source === "csv") {
    const file = files[0]!;
    const problems = files.length > 1 ? ["Choose one CSV file: a CSV import reads one text"] : [];
    return { source, data: file.text, names, taken: [`${file.name}: ${formatSize(chosen[0]!.size)}`], problems };
  }
  const read = keygenData(files);
  const missing = missingLists(read.data);
  if (read.problems.length === 0 && missing.length > 0)
    read.taken.push(
      missing.includes("licenses")
        ? "No licenses among these files: add the pages of Keygen's license list."
        : `Not among these files: ${missing.join(", ")} (the licenses naming them are reported).`,
    );
  return { source, data: read.data, names, taken: read.taken, problems: read.problems };
}

/** The figures' words: what a dry run would create, what an import created. */
function figures(report: ImportReport) {
  const made = report.dryRun ? "to create" : "created";
  return [
    { id: "customers", label: `Customers ${made}`, n: report.created.customers },
    { id: "licenses", label: `Licenses ${made}`, n: report.created.licenses },
    { id: "activations", label: `Activations ${made}`, n: report.created.activations },
    { id: "skipped", label: "Imported before (left as they are)", n: report.skipped },
    { id: "errors", label: "Problems (their rows left out)", n: report.errorCount },
  ];
}

/** The report's first sentence: the rows read, and what became (or would become) of them. */
function summary(report: ImportReport): string {
  const rows = (n: number) => `${formatCount(n)} row${n === 1 ? "" : "s"}`;
  if (report.status === "running")
    return `${report.dryRun ? "Judging" : "Importing"} ${rows(report.total)}: ${formatCount(report.processed)} done so far.`;
  if (report.status === "failed")
    return `The ${report.dryRun ? "dry run" : "import"} stopped after ${formatCount(report.processed)} of ${rows(report.total)}. Each row is written whole or not at all: run it again to finish (rows imported already are skipped).`;
  const licenses = report.created.licenses;
  const refused = Math.max(0, report.total - licenses - report.skipped);
  const parts = [
    `${formatCount(licenses)} ${report.dryRun ? "to import" : "imported"}`,
    ...(report.skipped > 0 ? [`${formatCount(report.skipped)} imported before (left as they are)`] : []),
    ...(refused > 0 ? [`${formatCount(refused)} left out for a problem (below)`] : []),
  ].join(", ");
  return report.dryRun
    ? `A dry run of ${rows(report.total)}, nothing written: ${parts}.`
    : `${rows(report.total)} read: ${parts}. Importing the same files again creates nothing twice.`;
}

/** A running import's progress: processed of total. */
function Progress({ report }: { report: ImportReport }) {
  const percent = Math.floor((report.processed / Math.max(1, report.total)) * 100);
  return (
    <div class="progress">
      <label for="import-progress">Progress</label>
      <progress id="import-progress" max={Math.max(1, report.total)} value={report.processed} />
      <span aria-live="polite" data-testid="import-progress">
        {formatCount(report.processed)} of {formatCount(report.total)} rows ({percent} %)
      </span>
    </div>
  );
}

/** The rows refused, by line (CSV) or by license (Keygen), field and message. */
function Problems({ report }: { report: ImportReport }) {
  if (report.errorCount === 0) return null;
  const where = report.source === "csv" ? "Line" : "License";
  return (
    <section aria-label="Problems">
      <h4>Problems</h4>
      <p class="hint">
        {report.source === "csv"
          ? "Lines of the CSV file (the header is line 1) that are not imported: correct them and import the file again."
          : "Licenses, by their place in Keygen's pages (the first is 1), that are not imported: correct them in Keygen or here, and import again."}{" "}
        A row without a line is about the file as a whole.
        {report.errorCount > report.errors.length
          ? ` The first ${formatCount(report.errors.length)} of ${formatCount(report.errorCount)} are listed.`
          : ""}
      </p>
      <Table<Problem & Record<string, unknown>>
        caption="Problems"
        rows={report.errors as (Problem & Record<string, unknown>)[]}
        columns={[
          { key: "row", label: where, render: (p) => (p.row === 0 ? "Whole file" : String(p.row)) },
          { key: "field", label: "Field", render: (p) => <code>{p.field}</code> },
          { key: "message", label: "Problem" },
        ]}
      />
    </section>
  );
}

/** The report of a dry run or an import: its figures, its progress while it runs, its problems, what it left out. */
function Report({ report, names }: { report: ImportReport; names: string[] }) {
  const title = `${report.dryRun ? "Dry run" : "Import"}: ${
    report.status === "running" ? "running" : report.status === "failed" ? "stopped" : "done"
  }`;
  return (
    <section
      class="card"
      aria-label="Report"
      data-status={report.status}
      data-dry-run={String(report.dryRun)}
      data-source={report.source}
    >
      <h3>{title}</h3>
      <p data-testid="import-summary">{summary(report)}</p>
      <dl class="facts">
        <dt>Files</dt>
        <dd>{names.join(", ")}</dd>
        <dt>Import id</dt>
        <dd>
          <code>{report.id}</code>, started {formatDate(report.createdAt)}
        </dd>
      </dl>
      {report.status === "running" ? <Progress report={report} /> : null}
      <div class="counts">
        {figures(report).map((f) => (
          <div class="count card" data-testid={`import-${f.id}`}>
            <span class="n">{formatCount(f.n)}</span>
            <span>{f.label}</span>
          </div>
        ))}
      </div>
      {!report.dryRun && report.status !== "running" && report.created.licenses > 0 ? (
        <p>
          <a href="#/licenses">See the licenses</a>: each keeps the key you issued (its legacy key), and that key works
          as it did.
        </p>
      ) : null}
      <Problems report={report} />
      {report.unsupported.length > 0 ? (
        <section aria-label="Not imported">
          <h4>Not imported (no equivalent here)</h4>
          <ul data-testid="import-unsupported">
            {report.unsupported.map((u) => (
              <li>{u}</li>
            ))}
          </ul>
        </section>
      ) : null}
    </section>
  );
}

/** Reads a running import again every POLL_MS until it is done (or failed); a failed read is tried again. */
function usePolling(report: ImportReport | undefined, update: (r: ImportReport) => void) {
  const [error, setError] = useState<string>();
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (report?.status !== "running") return;
    let live = true;
    const timer = setTimeout(async () => {
      try {
        const res = await api.GET("/v1/imports/{importId}", { params: { path: { importId: report.id } } });
        if (!live) return;
        if (res.data) {
          setError(undefined);
          update(res.data.data);
        } else {
          setError(`Reading the import's progress failed (${errorText(res.error, res.response)}); trying again`);
          setTick((t) => t + 1);
        }
      } catch (e) {
        if (!live) return;
        setError(`Reading the import's progress failed (${errorText(e)}); trying again`);
        setTick((t) => t + 1);
      }
    }, POLL_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [report, tick]);
  return error;
}

/** The chosen files' source and what the page reads them as. */
function SourceHint({ source }: { source: Source }) {
  return source === "csv" ? (
    <p class="hint" id="import-files-hint">
      One CSV file with a header row naming its columns: <code>{CSV_COLUMNS}</code>. <code>legacyKey</code> (the key as
      you issued it) and <code>product</code> (a product code of this service) are required; <code>machines</code> lists
      machine ids separated by <code>;</code>; <code>expireDate</code> is YYYY-MM-DD or an ISO 8601 instant.
    </p>
  ) : (
    <p class="hint" id="import-files-hint">
      Either one JSON file holding the whole export, <code>{"{ products, policies, licenses, machines, users }"}</code>{" "}
      (each one page of Keygen's list or an array of its pages), or several JSON files, one a page of a list as Keygen's
      API answers it (e.g. <code>licenses-page-1.json</code>, <code>machines-page-2.json</code>): they are put together
      by their resources' <code>type</code>, pages in the order of the files' names. A license's product is this
      service's product whose code is Keygen's product code (else its name): create the products first.
    </p>
  );
}

export function Import() {
  const [source, setSource] = useState<Source>("keygen");
  const [prepared, setPrepared] = useState<Prepared>();
  const [report, setReport] = useState<{ report: ImportReport; names: string[] }>();
  const action = useAction();
  const pollError = usePolling(report?.report, (r) => setReport((current) => current && { ...current, report: r }));
  const running = report?.report.status === "running";
  const ready = prepared !== undefined && prepared.source === source && prepared.problems.length === 0;
  const start = (dryRun: boolean) =>
    action.run(async () => {
      if (!prepared) return;
      const res = await api.POST("/v1/imports", { body: { source: prepared.source, dryRun, data: prepared.data } });
      setReport({ report: must(res).data, names: prepared.names });
    });
  return (
    <>
      <h2>Import licenses</h2>
      <p class="hint" role="note">
        Moving in from Keygen or a spreadsheet: your customers keep the keys you issued, and installed apps keep
        working. Start with a dry run: it judges every row and writes nothing. Rows with a problem are left out, never
        half-written; the others are imported. Importing the same files again creates nothing twice.
      </p>
      <form
        class="card form"
        aria-label="What to import"
        onSubmit={(e) => {
          e.preventDefault();
          void start(false);
        }}
      >
        <fieldset class="checks">
          <legend>Import from</legend>
          {SOURCES.map((s) => (
            <label class="check" for={`import-source-${s.value}`}>
              <input
                type="radio"
                id={`import-source-${s.value}`}
                name="source"
                value={s.value}
                checked={source === s.value}
                onChange={() => {
                  setSource(s.value);
                  setPrepared(undefined);
                }}
              />{" "}
              {s.label}
            </label>
          ))}
        </fieldset>
        <div class="field import-file">
          <label for="import-files">{source === "csv" ? "File to import" : "Files to import"}</label>
          <input
            key={source}
            id="import-files"
            type="file"
            accept={source === "csv" ? ".csv,text/csv,text/plain" : ".json,application/json"}
            multiple={source === "keygen"}
            required
            aria-describedby="import-files-hint"
            onChange={(e) => {
              const files = [...(e.currentTarget.files ?? [])];
              setPrepared(undefined);
              if (files.length > 0) void action.run(async () => setPrepared(await prepare(source, files)));
            }}
          />
        </div>
        <SourceHint source={source} />
        {prepared?.source === source ? (
          <ul class="hint" data-testid="import-taken" aria-live="polite">
            {prepared.taken.map((t) => (
              <li>{t}</li>
            ))}
          </ul>
        ) : null}
        <ErrorBox
          error={prepared?.source === source && prepared.problems.length > 0 ? prepared.problems.join(" ") : undefined}
        />
        <ErrorBox error={action.error} />
        <div class="actions">
          <button type="button" disabled={!ready || action.busy || running} onClick={() => void start(true)}>
            Dry run
          </button>
          <button type="submit" class="primary" disabled={!ready || action.busy || running}>
            Import
          </button>
          {action.busy ? <span aria-busy="true">Working…</span> : null}
        </div>
      </form>
      <ErrorBox error={pollError} />
      {report ? <Report report={report.report} names={report.names} /> : null}
    </>
  );
}
