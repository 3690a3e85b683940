/**
 * The parsers of the settings' raw text (settings.ts declares each setting with one): each turns a string into the
 * setting's value, or throws with a message a person reads.
 */
import { z } from "zod";

/** Parses one raw string into a setting's value; throws with a human message when the text is not valid. */
export type Parser<T> = (raw: string) => T;

export interface SettingDefinition<T> {
  parse: Parser<T>;
  default: T;
  /** Secrets are never returned by `GET /v1/settings`. */
  secret?: boolean;
  description: string;
  /** The default while `Application:Environment` is Development, when it differs from `default`. */
  developmentDefault?: T;
}

export const bool: Parser<boolean> = (raw) => {
  const v = raw.trim().toLowerCase();
  if (v === "true" || v === "1" || v === "yes") return true;
  if (v === "false" || v === "0" || v === "no") return false;
  throw new Error(`expected true or false, got "${raw}"`);
};

export const int =
  (min: number, max = Number.MAX_SAFE_INTEGER): Parser<number> =>
  (raw) => {
    const v = raw.trim();
    if (!/^-?\d+$/.test(v)) throw new Error(`expected an integer, got "${raw}"`);
    const n = Number(v);
    if (n < min || n > max) throw new Error(`expected an integer from ${min} to ${max}, got ${n}`);
    return n;
  };

/** `hh:mm:ss`, `d.hh:mm:ss` (optionally with `.fff` seconds), as SPEC writes durations; the value is milliseconds. */
export const duration: Parser<number> = (raw) => {
  const m = /^(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?$/.exec(raw.trim());
  if (!m) throw new Error(`expected a duration hh:mm:ss or d.hh:mm:ss, got "${raw}"`);
  const [, d, h, min, s, frac] = m;
  if (Number(min) > 59 || Number(s) > 59 || Number(h) > 23) throw new Error(`duration out of range: "${raw}"`);
  return (
    ((Number(d ?? 0) * 24 + Number(h)) * 60 + Number(min)) * 60_000 +
    Number(s) * 1000 +
    Number((frac ?? "0").padEnd(3, "0"))
  );
};

/** A duration of at most `maxMs` (a ceiling that keeps a security promise, such as how late a revocation applies). */
export function durationUpTo(maxMs: number, why: string): Parser<number> {
  const parse: Parser<number> = (raw) => {
    const ms = duration(raw);
    if (ms > maxMs) throw new Error(`at most ${maxMs / 60_000} minutes (${why}), got "${raw}"`);
    return ms;
  };
  DURATION_PARSERS.add(parse);
  return parse;
}

/** A duration of at least `minMs` (a zero would end what it times at once). */
export function durationAtLeast(minMs: number): Parser<number> {
  const parse: Parser<number> = (raw) => {
    const ms = duration(raw);
    if (ms < minMs) throw new Error(`at least ${minMs / 1000} seconds, got "${raw}"`);
    return ms;
  };
  DURATION_PARSERS.add(parse);
  return parse;
}

/** The parsers whose settings are durations (written `hh:mm:ss` in the settings list). */
export const DURATION_PARSERS = new Set<(raw: string) => unknown>([duration]);

export const text =
  (pattern?: RegExp): Parser<string> =>
  (raw) => {
    if (pattern && !pattern.test(raw)) throw new Error(`"${raw}" does not match ${pattern}`);
    return raw;
  };

export const optionalText: Parser<string | undefined> = (raw) => (raw.trim() === "" ? undefined : raw);

/** An absolute https URL without credentials (a logo an https page may show), or nothing. */
export const optionalHttpsUrl: Parser<string | undefined> = (raw) => {
  const v = raw.trim();
  if (v === "") return undefined;
  const url = URL.canParse(v) ? new URL(v) : undefined;
  if (url?.protocol !== "https:" || url.username !== "" || url.password !== "")
    throw new Error(`expected an https URL such as https://example.com/logo.svg, got "${raw}"`);
  return url.href;
};

/** A bare email address (`name@domain`), or nothing. */
export const optionalEmail: Parser<string | undefined> = (raw) => {
  const v = raw.trim();
  if (v === "") return undefined;
  if (!/^[^\s@<>",;]+@[^\s@<>",;]+$/.test(v))
    throw new Error(`expected an email address such as licensing@example.com, got "${raw}"`);
  return v;
};

// Schemas are built once per isolate, not each time the settings are read again (every SettingsCacheSeconds).
const StringList = z.array(z.string());
const PlatformEditionsSchema = z
  .object({
    windows: z.array(z.string()).default([]),
    mac: z.array(z.string()).default([]),
    linux: z.array(z.string()).default([]),
  })
  .strict();

/** A JSON array of strings, or a comma-separated string. */
export const list: Parser<string[]> = (raw) => {
  const v = raw.trim();
  if (v.startsWith("[")) {
    const parsed = StringList.safeParse(safeJson(v));
    if (!parsed.success) throw new Error(`expected a JSON array of strings, got ${raw}`);
    return parsed.data.map((s) => s.trim()).filter(Boolean);
  }
  return v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
};

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/**
 * An https origin (`https://licensing.example.com`, a port allowed; no path, query, fragment or credentials), or
 * nothing. The value is the origin as URL writes it (lowercase host, no default port, no trailing slash).
 */
export const optionalHttpsOrigin: Parser<string | undefined> = (raw) => {
  const v = raw.trim();
  if (v === "") return undefined;
  const url = URL.canParse(v) ? new URL(v) : undefined;
  if (
    url?.protocol !== "https:" ||
    url.username !== "" ||
    url.password !== "" ||
    url.pathname !== "/" ||
    /[?#]/.test(v) ||
    !/^https:\/\/[^/]+\/?$/i.test(v)
  )
    throw new Error(`expected an https origin such as https://licensing.example.com (no path or query), got "${raw}"`);
  return url.origin;
};

/** Platform family -> license editions allowed on it; a family that is absent or empty is open to every edition. */
export type PlatformEditions = Record<"windows" | "mac" | "linux", string[]>;
export const platformEditions: Parser<PlatformEditions> = (raw) => {
  const parsed = PlatformEditionsSchema.safeParse(safeJson(raw));
  if (!parsed.success) throw new Error(`expected a JSON object {"windows":[…],"mac":[…],"linux":[…]}, got ${raw}`);
  return parsed.data;
};

export const def = <T>(parse: Parser<T>, dflt: T, description: string, secret = false): SettingDefinition<T> => ({
  parse,
  default: dflt,
  description,
  secret,
});

/** A setting whose default differs in development (`developmentDefault`) from every other environment (`dflt`). */
export const devDef = <T>(
  parse: Parser<T>,
  dflt: T,
  developmentDefault: T,
  description: string,
): SettingDefinition<T> => ({
  ...def(parse, dflt, description),
  developmentDefault,
});
