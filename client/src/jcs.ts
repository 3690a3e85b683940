/**
 * RFC 8785 JSON Canonicalization Scheme (JCS): the exact bytes the service signs for an update check (CONTRACT
 * section 5). ECMAScript's own JSON serialization of numbers and strings is what the RFC prescribes, so only the
 * object key order (UTF-16 code units) and the refusals are added here.
 */

/** A value JSON can represent. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

// A lone surrogate cannot be written as UTF-8; RFC 8785 section 3.2.2.2 requires refusing it.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function serializeString(value: string): string {
  if (LONE_SURROGATE.test(value)) throw new TypeError("JCS: a string holds a lone surrogate");
  return JSON.stringify(value);
}

function serialize(value: unknown, out: string[]): void {
  if (value === null) {
    out.push("null");
    return;
  }
  switch (typeof value) {
    case "boolean":
      out.push(value ? "true" : "false");
      return;
    case "number":
      // Number.prototype.toString is RFC 8785's number format (-0 becomes 0); NaN and infinities are not JSON.
      if (!Number.isFinite(value)) throw new TypeError(`JCS: ${value} is not a JSON number`);
      out.push(JSON.stringify(value));
      return;
    case "string":
      out.push(serializeString(value));
      return;
    case "object": {
      if (Array.isArray(value)) {
        out.push("[");
        value.forEach((item, i) => {
          if (i > 0) out.push(",");
          serialize(item, out);
        });
        out.push("]");
        return;
      }
      const record = value as Record<string, unknown>;
      // Array.prototype.sort without a comparator orders strings by UTF-16 code units, as section 3.2.3 requires.
      const keys = Object.keys(record)
        .filter((k) => record[k] !== undefined)
        .sort();
      out.push("{");
      keys.forEach((key, i) => {
        if (i > 0) out.push(",");
        out.push(serializeString(key), ":");
        serialize(record[key], out);
      });
      out.push("}");
      return;
    }
    default:
      throw new TypeError(`JCS: a ${typeof value} is not a JSON value`);
  }
}

/**
 * The RFC 8785 canonical JSON text of a value: object members sorted by the UTF-16 code units of their names, no
 * whitespace, ECMAScript number and string serialization. Object members whose value is `undefined` are left out, as
 * `JSON.stringify` does; any other non-JSON value (a function, a bigint, NaN, a lone surrogate) throws a TypeError.
 */
export function canonicalize(value: unknown): string {
  const out: string[] = [];
  serialize(value, out);
  return out.join("");
}
