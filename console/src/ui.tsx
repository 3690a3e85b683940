/** Shared building blocks: errors, forms, the paged list with the API's list conventions, and an SVG bar chart. */
import type { ComponentChildren, JSX } from "preact";
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { call, errorText } from "./api/client";
import { type Table as RefTable, useChoices, useName } from "./lookup";
import { formatDate, formatSize, labelOf, named } from "./words";
import { FilterBar, type FilterField } from "./filters";

export function ErrorBox({ error }: { error: string | undefined }) {
  return error ? (
    <p class="error" role="alert">
      {error}
    </p>
  ) : null;
}

export function Notice({ text }: { text: string | undefined }) {
  return text ? (
    <p class="notice" role="status">
      {text}
    </p>
  ) : null;
}

/** Runs an action, keeping its error (as the API words it) and a busy flag for the button that started it. */
export function useAction() {
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const run = useCallback(async (action: () => Promise<unknown>) => {
    setBusy(true);
    setError(undefined);
    try {
      await action();
      return true;
    } catch (e) {
      setError(errorText(e instanceof Error ? e.message : e));
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { error, busy, run, setError };
}

export type FieldKind =
  | "text"
  | "number"
  | "bool"
  | "date"
  | "list"
  | "lines"
  | "select"
  | "checks"
  | "textarea"
  | "password";
export interface FieldSpec {
  name: string;
  label: string;
  kind?: FieldKind;
  options?: readonly string[];
  required?: boolean;
  hint?: string;
  /** Left empty, the field is sent as null (clears the value) rather than left out. */
  nullable?: boolean;
  /** An id field referencing this table: suggests the records by name and names the record typed. */
  ref?: RefTable;
}

/**
 * Turns form strings into the API's JSON values; empty fields are left out (partial updates keep them), but for
 * `lines` (a list, one item a line) and `nullable` fields, which an empty box clears (null).
 */
export function formValues(fields: readonly FieldSpec[], form: HTMLFormElement): Record<string, unknown> {
  const data = new FormData(form);
  const values: Record<string, unknown> = {};
  for (const f of fields) {
    if (f.kind === "bool") {
      values[f.name] = data.get(f.name) === "on";
      continue;
    }
    if (f.kind === "checks") {
      values[f.name] = data.getAll(f.name).map(String);
      continue;
    }
    const raw = String(data.get(f.name) ?? "").trim();
    if (f.kind === "lines") {
      const items = raw
        .split(/\r?\n/)
        .map((s) => s.trim())
        .filter(Boolean);
      values[f.name] = items.length > 0 ? items : null;
      continue;
    }
    if (raw === "") {
      if (f.nullable) values[f.name] = null;
      continue;
    }
    if (f.kind === "number") values[f.name] = Number(raw);
    else if (f.kind === "list")
      values[f.name] = raw
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
    else if (f.kind === "date") values[f.name] = new Date(raw).toISOString();
    else values[f.name] = raw;
  }
  return values;
}

/** The text a field starts with for a value the API returned. */
function initialText(spec: FieldSpec, value: unknown): string {
  if (value === undefined || value === null) return "";
  if (Array.isArray(value)) return value.join(spec.kind === "lines" ? "\n" : ", ");
  if (spec.kind === "date") return String(value).slice(0, 16);
  return String(value);
}

export function Field({ spec, value }: { spec: FieldSpec; value?: unknown }) {
  const id = `f-${spec.name}`;
  if (spec.kind === "checks") {
    // A group of checkboxes, one per option, named by a fieldset legend (used by create forms: starts unchecked).
    return (
      <fieldset class="field checks">
        <legend>{spec.label}</legend>
        {spec.options?.map((o, i) => (
          <label class="check" for={`${id}-${i}`}>
            <input type="checkbox" id={`${id}-${i}`} name={spec.name} value={o} /> {o}
          </label>
        ))}
        {spec.hint ? <small class="hint">{spec.hint}</small> : null}
      </fieldset>
    );
  }
  // Uncontrolled inputs: the initial value is written once, so a re-render never overwrites what the user typed.
  // A layout effect runs before the browser paints, so nobody can type into the field before it is written.
  const ref = useRef<HTMLInputElement & HTMLSelectElement & HTMLTextAreaElement>(null);
  const choices = useChoices(spec.ref);
  const [typed, setTyped] = useState(() => initialText(spec, value));
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    if (spec.kind === "bool") el.checked = value === true;
    else el.value = initialText(spec, value);
  }, []);
  const common = {
    id,
    name: spec.name,
    ref,
    required: spec.required,
    "aria-describedby": spec.hint || spec.ref ? `${id}-hint` : undefined,
  };
  let input: JSX.Element;
  switch (spec.kind) {
    case "bool":
      input = <input type="checkbox" {...common} required={false} />;
      break;
    case "select":
      input = (
        <select {...common}>
          <option value="">{spec.required ? "Choose…" : "(default)"}</option>
          {spec.options?.map((o) => (
            <option value={o}>{o}</option>
          ))}
        </select>
      );
      break;
    case "textarea":
    case "lines":
      input = <textarea {...common} rows={3} />;
      break;
    default:
      input = (
        <input
          {...common}
          list={spec.ref ? `${id}-choices` : undefined}
          onInput={spec.ref ? (e) => setTyped(e.currentTarget.value) : undefined}
          type={
            (spec.kind === "number"
              ? "number"
              : spec.kind === "date"
                ? "datetime-local"
                : spec.kind === "password"
                  ? "password"
                  : "text") as "text"
          }
        />
      );
  }
  return (
    <div class={spec.kind === "bool" ? "field check" : "field"}>
      <label for={id}>{spec.label}</label>
      {input}
      {spec.ref ? (
        <>
          <datalist id={`${id}-choices`}>
            {choices.map((c) => (
              <option value={c.id}>{c.name}</option>
            ))}
          </datalist>
          <small id={`${id}-hint`} class="hint" aria-live="polite">
            {typed.trim() ? <Ref table={spec.ref} id={typed.trim()} /> : spec.hint}
          </small>
        </>
      ) : spec.hint ? (
        <small id={`${id}-hint`} class="hint">
          {spec.hint}
        </small>
      ) : null}
    </div>
  );
}

/** A form for a record: sends `{[wrapper]: values}` and reports the API's answer or error. */
export function EntityForm(props: {
  title: string;
  fields: readonly FieldSpec[];
  initial?: Record<string, unknown>;
  submitLabel: string;
  onSubmit: (values: Record<string, unknown>) => Promise<unknown>;
  onDone?: (result: unknown) => void;
  onCancel?: () => void;
}) {
  const { error, busy, run } = useAction();
  return (
    <form
      class="card form"
      aria-label={props.title}
      onSubmit={async (e) => {
        e.preventDefault();
        const form = e.currentTarget;
        let result: unknown;
        if (await run(async () => (result = await props.onSubmit(formValues(props.fields, form)))))
          props.onDone?.(result);
      }}
    >
      <h3>{props.title}</h3>
      <div class="grid">
        {props.fields.map((f) => (
          <Field spec={f} value={props.initial?.[f.name]} />
        ))}
      </div>
      <ErrorBox error={error} />
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {props.submitLabel}
        </button>
        {props.onCancel ? (
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}

export interface Column<T> {
  key: string;
  /** Default: the property's label in words (words.ts). */
  label?: string;
  /** The property references a record of this table: shown by name beside the id. */
  ref?: RefTable;
  render?: (row: T) => ComponentChildren;
}

const isInstant = (value: unknown) => typeof value === "string" && /^\d{4}-\d\d-\d\dT/.test(value);

/** A value for display: lists joined, booleans in words, ISO dates in the viewer's locale. */
export function cell(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (Array.isArray(value)) return value.join(", ");
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (isInstant(value)) return formatDate(value as string);
  return String(value);
}

/** A property's value for display: enumerations by name, byte counts (`size`) in KiB/MiB, the rest as cell(). */
export function shown(key: string, value: unknown): string {
  if (key === "size" && typeof value === "number") return formatSize(value);
  return cell(named(key, value));
}

/** A referenced record by name beside its id ("Studio #3"); the id alone while the name is read or unknown. */
export function Ref({ table, id }: { table: RefTable; id: unknown }) {
  const name = useName(table, id);
  if (id === undefined || id === null || id === "") return null;
  return name ? (
    <span class="ref">
      {name} <small class="id">#{String(id)}</small>
    </span>
  ) : (
    <span class="ref">#{String(id)}</span>
  );
}

export function Table<T extends Record<string, unknown>>({
  rows,
  columns,
  caption,
  actions,
}: {
  rows: T[];
  columns: Column<T>[];
  caption: string;
  actions?: (row: T) => ComponentChildren;
}) {
  return (
    <div class="table-wrap">
      <table>
        <caption class="sr-only">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col">{c.label ?? labelOf(c.key)}</th>
            ))}
            {actions ? (
              <th scope="col" class="row-actions">
                Actions
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 ? (
            <tr>
              <td colSpan={columns.length + (actions ? 1 : 0)} class="empty">
                Nothing here yet.
              </td>
            </tr>
          ) : (
            rows.map((row) => (
              <tr>
                {columns.map((c) => (
                  <td class={!c.render && isInstant(row[c.key]) ? "date" : undefined}>
                    {c.render ? (
                      c.render(row)
                    ) : c.ref ? (
                      <Ref table={c.ref} id={row[c.key]} />
                    ) : (
                      shown(c.key, row[c.key])
                    )}
                  </td>
                ))}
                {actions ? <td class="row-actions">{actions(row)}</td> : null}
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}

/** The list's array and total, whatever the resource's plural is (CONTRACT: `<plural>` and `total<Plural>Count`). */
export function listOf(data: Record<string, unknown>): { rows: Record<string, unknown>[]; total: number } {
  const rows = Object.values(data).find(Array.isArray) as Record<string, unknown>[] | undefined;
  const totalKey = Object.keys(data).find((k) => /^total\w*Count$/.test(k));
  return { rows: rows ?? [], total: totalKey ? Number(data[totalKey]) : (rows?.length ?? 0) };
}

const PAGE = 25;

/**
 * A paged list with the API's list conventions: `filter` (the service's filter language), `sort`, `skip`, `take`.
 * `reload` changes whenever the caller wants the list read again.
 */
export function ListView(props: {
  title: string;
  path: string;
  columns: Column<Record<string, unknown>>[];
  query?: Record<string, string>;
  defaultSort?: string;
  /** The filter box's placeholder: a filter that works on this list (the browser test applies every one). */
  filterHint: string;
  /** Simple filter fields that write the expression (filters.tsx); without them, the expression box alone. */
  filters?: readonly FilterField[];
  reload?: number;
  actions?: (row: Record<string, unknown>, refresh: () => void) => ComponentChildren;
}) {
  const [applied, setApplied] = useState("");
  const [skip, setSkip] = useState(0);
  const [tick, setTick] = useState(0);
  const [state, setState] = useState<{ rows: Record<string, unknown>[]; total: number }>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(true);
  /** The user's filter of the last answer (or error), for whoever waits for it (the browser test). */
  const [answered, setAnswered] = useState<string>();
  const refresh = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    let live = true;
    setBusy(true);
    // A page's own filter (the audit trail's category) always applies; the user's narrows it.
    const base = props.query?.["filter"];
    const filter = base && applied ? `(${base}) && (${applied})` : base || applied || undefined;
    call("GET", props.path, { query: { ...props.query, filter, sort: props.defaultSort ?? "-id", skip, take: PAGE } })
      .then((data) => {
        if (!live) return;
        setState(listOf(data));
        setError(undefined);
      })
      .catch((e: Error) => live && setError(e.message))
      .finally(() => {
        if (!live) return;
        setBusy(false);
        setAnswered(applied);
      });
    return () => {
      live = false;
    };
  }, [props.path, applied, skip, tick, props.reload, JSON.stringify(props.query)]);
  const total = state?.total ?? 0;
  return (
    <section class="card" aria-label={props.title} aria-busy={busy} data-filter={answered}>
      <h3>{props.title}</h3>
      <FilterBar
        title={props.title}
        fields={props.filters}
        hint={props.filterHint}
        onApply={(expression) => {
          setSkip(0);
          setApplied(expression);
          refresh();
        }}
        onRefresh={refresh}
      />
      <ErrorBox error={error} />
      {state ? (
        <Table
          rows={state.rows}
          columns={props.columns}
          caption={props.title}
          actions={props.actions ? (row) => props.actions!(row, refresh) : undefined}
        />
      ) : (
        <p aria-busy="true">Loading…</p>
      )}
      <nav class="pager" aria-label={`${props.title} pages`}>
        <button type="button" disabled={skip === 0} onClick={() => setSkip(Math.max(0, skip - PAGE))}>
          Previous
        </button>
        <span>
          {total === 0 ? "0" : `${skip + 1}–${Math.min(skip + PAGE, total)}`} of {total}
        </span>
        <button type="button" disabled={skip + PAGE >= total} onClick={() => setSkip(skip + PAGE)}>
          Next
        </button>
      </nav>
    </section>
  );
}

/** A bar chart in inline SVG, with the numbers also in a table for screen readers. */
export function BarChart({
  title,
  data,
  color = "#2f5fb3",
}: {
  title: string;
  data: { label: string; value: number }[];
  color?: string;
}) {
  const width = 480;
  const height = 160;
  const max = Math.max(1, ...data.map((d) => d.value));
  const bar = data.length ? width / data.length : width;
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <svg
        viewBox={`0 0 ${width} ${height + 20}`}
        role="img"
        aria-label={`${title}: ${data.map((d) => `${d.label} ${d.value}`).join(", ") || "no data"}`}
      >
        <line x1="0" y1={height} x2={width} y2={height} stroke="#666" />
        {data.map((d, i) => {
          const h = (d.value / max) * (height - 16);
          return (
            <g>
              <rect x={i * bar + 2} y={height - h} width={Math.max(1, bar - 4)} height={h} fill={color}>
                <title>{`${d.label}: ${d.value}`}</title>
              </rect>
              {data.length <= 16 ? (
                <text x={i * bar + bar / 2} y={height + 14} text-anchor="middle" font-size="10" fill="#333">
                  {d.label}
                </text>
              ) : null}
              {d.value > 0 && data.length <= 16 ? (
                <text x={i * bar + bar / 2} y={height - h - 3} text-anchor="middle" font-size="10" fill="#222">
                  {d.value}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      {data.length === 0 ? <p class="hint">No data yet.</p> : null}
    </figure>
  );
}

/**
 * Bars in groups (one group per label, one bar per series) in inline SVG, with a legend, and the numbers in a table
 * as the chart's text alternative (the SVG's own name says them too, as BarChart's does).
 */
export function GroupedBarChart({
  title,
  series,
  data,
  labelHeader,
}: {
  title: string;
  series: { name: string; color: string }[];
  data: { label: string; values: number[] }[];
  labelHeader: string;
}) {
  const width = 480;
  const height = 160;
  const max = Math.max(1, ...data.flatMap((d) => d.values));
  const group = data.length ? width / data.length : width;
  const bar = Math.max(1, (group - 8) / series.length);
  const spoken = data.map((d) => `${d.label} ${series.map((s, i) => `${s.name} ${d.values[i] ?? 0}`).join(" ")}`);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <ul class="legend" aria-hidden="true">
        {series.map((s) => (
          <li>
            <span class="swatch" style={{ background: s.color }} />
            {s.name}
          </li>
        ))}
      </ul>
      <svg
        viewBox={`0 0 ${width} ${height + 20}`}
        role="img"
        aria-label={`${title}: ${spoken.join(", ") || "no data"}`}
      >
        <line x1="0" y1={height} x2={width} y2={height} stroke="#666" />
        {data.map((d, g) => (
          <g>
            {series.map((s, i) => {
              const value = d.values[i] ?? 0;
              const h = (value / max) * (height - 16);
              const x = g * group + 4 + i * bar;
              return (
                <>
                  <rect x={x + 1} y={height - h} width={Math.max(1, bar - 2)} height={h} fill={s.color}>
                    <title>{`${d.label}, ${s.name}: ${value}`}</title>
                  </rect>
                  {value > 0 && data.length <= 12 ? (
                    <text x={x + bar / 2} y={height - h - 3} text-anchor="middle" font-size="10" fill="#222">
                      {value}
                    </text>
                  ) : null}
                </>
              );
            })}
            {data.length <= 12 ? (
              <text x={g * group + group / 2} y={height + 14} text-anchor="middle" font-size="10" fill="#333">
                {d.label}
              </text>
            ) : null}
          </g>
        ))}
      </svg>
      {data.length === 0 ? (
        <p class="hint">No data yet.</p>
      ) : (
        <table class="chart-table">
          <caption class="sr-only">{`${title}, as a table`}</caption>
          <thead>
            <tr>
              <th scope="col">{labelHeader}</th>
              {series.map((s) => (
                <th scope="col">{s.name}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {data.map((d) => (
              <tr>
                <th scope="row">{d.label}</th>
                {series.map((_, i) => (
                  <td>{d.values[i] ?? 0}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </figure>
  );
}

/** Copies text with the Clipboard API, saying whether it worked. */
export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState<string>();
  return (
    <span>
      <button
        type="button"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(text);
            setDone("Copied");
          } catch {
            setDone("Copy failed: select the text and copy it");
          }
        }}
      >
        {label}
      </button>{" "}
      <span role="status">{done}</span>
    </span>
  );
}
