/**
 * A list's filter (issue 37, "filters"): simple fields (a text search, choices, a referenced record, a date range)
 * that write the service's filter expression, with the expression itself as the advanced option, to read or to
 * write by hand. The one filter of every list: ListView (ui.tsx) shows it, each list declares its fields.
 */
import { useState } from "preact/hooks";
import { type Table as RefTable, useChoices } from "./lookup";

/** A choice's filter: an expression, or one made when applied (one that compares with the current time). */
type Expression = string | (() => string);

export type FilterField =
  /** Text: any of `keys` contains it, ignoring case. */
  | { kind: "search"; label: string; keys: readonly string[] }
  /** One of several named filters (a status, a mode); the first entry, "any", filters nothing. */
  | { kind: "choice"; label: string; choices: readonly { label: string; filter: Expression }[] }
  /** A referenced record, chosen by name (its id written into the expression). */
  | { kind: "ref"; label: string; key: string; table: RefTable }
  /** A date property between two days (the viewer's days), both included. */
  | { kind: "dates"; label: string; key: string };

/** Filter field constructors, so a list declares its fields in a line each. */
export const filterBy = {
  search: (label: string, ...keys: string[]): FilterField => ({ kind: "search", label, keys }),
  /** `key == "value"` for each value (an enumeration's names). */
  values: (label: string, key: string, values: readonly string[]): FilterField => ({
    kind: "choice",
    label,
    choices: values.map((v) => ({ label: v, filter: `${key} == ${JSON.stringify(v)}` })),
  }),
  choice: (label: string, choices: readonly { label: string; filter: Expression }[]): FilterField => ({
    kind: "choice",
    label,
    choices,
  }),
  yesNo: (label: string, key: string): FilterField => ({
    kind: "choice",
    label,
    choices: [
      { label: "yes", filter: `${key} == true` },
      { label: "no", filter: `${key} == false` },
    ],
  }),
  ref: (label: string, key: string, table: RefTable): FilterField => ({ kind: "ref", label, key, table }),
  dates: (label: string, key: string): FilterField => ({ kind: "dates", label, key }),
};

type Values = Readonly<Record<string, string>>;

const slug = (text: string) => text.replace(/\W+/g, "-").toLowerCase();
/** The instant a viewer's day starts, ISO (a date input's value is a day of the viewer's calendar). */
const dayStart = (day: string, plusDays = 0) => {
  const date = new Date(`${day}T00:00:00`);
  date.setDate(date.getDate() + plusDays);
  return date.toISOString();
};
const quoted = (text: string) => JSON.stringify(text);
const grouped = (expression: string) => (/\|\|/.test(expression) ? `(${expression})` : expression);

/** The expression the simple fields' values write: each field's terms, all of them required (`&&`). */
export function compose(fields: readonly FilterField[], values: Values): string {
  const terms: string[] = [];
  for (const field of fields) {
    const name = slug(field.label);
    const value = values[name]?.trim() ?? "";
    switch (field.kind) {
      case "search": {
        if (!value) break;
        const needle = quoted(value.toLowerCase());
        terms.push(grouped(field.keys.map((k) => `${k}.ToLower().Contains(${needle})`).join(" || ")));
        break;
      }
      case "choice": {
        const chosen = field.choices.find((c) => c.label === value);
        if (chosen) terms.push(grouped(typeof chosen.filter === "string" ? chosen.filter : chosen.filter()));
        break;
      }
      case "ref":
        if (/^\d+$/.test(value)) terms.push(`${field.key} == ${value}`);
        break;
      case "dates": {
        const from = values[`${name}-from`];
        const to = values[`${name}-to`];
        if (from) terms.push(`${field.key} >= ${quoted(dayStart(from))}`);
        if (to) terms.push(`${field.key} < ${quoted(dayStart(to, 1))}`);
        break;
      }
    }
  }
  return terms.join(" && ");
}

function RefSelect({
  id,
  table,
  value,
  onChange,
}: {
  id: string;
  table: RefTable;
  value: string;
  onChange: (v: string) => void;
}) {
  const choices = useChoices(table);
  return (
    <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
      <option value="">any</option>
      {choices.map((c) => (
        <option value={c.id}>
          {c.name || "(no name)"} #{c.id}
        </option>
      ))}
    </select>
  );
}

/** One simple field: its label and input(s). */
function SimpleField({
  field,
  prefix,
  values,
  set,
}: {
  field: FilterField;
  prefix: string;
  values: Values;
  set: (name: string, value: string) => void;
}) {
  const name = slug(field.label);
  const id = `${prefix}-${name}`;
  const value = values[name] ?? "";
  switch (field.kind) {
    case "search":
      return (
        <span class="filter-field">
          <label for={id}>{field.label}</label>
          <input id={id} type="search" value={value} onInput={(e) => set(name, e.currentTarget.value)} />
        </span>
      );
    case "choice":
      return (
        <span class="filter-field">
          <label for={id}>{field.label}</label>
          <select id={id} value={value} onChange={(e) => set(name, e.currentTarget.value)}>
            <option value="">any</option>
            {field.choices.map((c) => (
              <option>{c.label}</option>
            ))}
          </select>
        </span>
      );
    case "ref":
      return (
        <span class="filter-field">
          <label for={id}>{field.label}</label>
          <RefSelect id={id} table={field.table} value={value} onChange={(v) => set(name, v)} />
        </span>
      );
    case "dates":
      return (
        <span class="filter-field">
          <label for={`${id}-from`}>{field.label} from</label>
          <input
            id={`${id}-from`}
            type="date"
            value={values[`${name}-from`] ?? ""}
            onInput={(e) => set(`${name}-from`, e.currentTarget.value)}
          />
          <label for={`${id}-to`}>to</label>
          <input
            id={`${id}-to`}
            type="date"
            value={values[`${name}-to`] ?? ""}
            onInput={(e) => set(`${name}-to`, e.currentTarget.value)}
          />
        </span>
      );
  }
}

/**
 * The filter of a list: its simple fields, the expression they write (under "Filter expression", open from the
 * start when the list has no simple fields), Apply, Clear and Refresh. `onApply` gets the expression.
 */
export function FilterBar(props: {
  title: string;
  fields?: readonly FilterField[] | undefined;
  /** The expression box's placeholder: a filter that works on this list (the browser test applies every one). */
  hint: string;
  onApply: (expression: string) => void;
  onRefresh: () => void;
}) {
  const fields = props.fields ?? [];
  const [values, setValues] = useState<Values>({});
  const [expression, setExpression] = useState("");
  const prefix = `filter-${slug(props.title)}`;
  const set = (name: string, value: string) => {
    const next = { ...values, [name]: value };
    setValues(next);
    setExpression(compose(fields, next));
  };
  const box = (
    <span class="filter-expression">
      <label for={prefix}>Filter</label>
      <input
        id={prefix}
        value={expression}
        onInput={(e) => setExpression(e.currentTarget.value)}
        placeholder={props.hint}
      />
    </span>
  );
  return (
    <search>
      <form
        class={fields.length ? "filter with-fields" : "filter"}
        onSubmit={(e) => {
          e.preventDefault();
          props.onApply(expression.trim());
        }}
      >
        {fields.map((field) => (
          <SimpleField field={field} prefix={prefix} values={values} set={set} />
        ))}
        {fields.length ? (
          <details class="advanced">
            <summary>Filter expression</summary>
            {box}
          </details>
        ) : (
          box
        )}
        <span class="filter-buttons">
          <button type="submit">Apply</button>
          {fields.length ? (
            <button
              type="button"
              onClick={() => {
                setValues({});
                setExpression("");
                props.onApply("");
              }}
            >
              Clear
            </button>
          ) : null}
          <button type="button" onClick={props.onRefresh}>
            Refresh
          </button>
        </span>
      </form>
    </search>
  );
}
