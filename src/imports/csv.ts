/**
 * The CSV source of imports (CONTRACT section 16): a CSV text with a header row becomes ImportRows, one a license.
 * Pure: no D1, no HTTP. The text is split into records by papaparse (RFC 4180 quoting, commas, quotes and line breaks
 * in quoted fields, CRLF, a UTF-8 byte order mark); this module reads the header and checks each record's fields.
 *
 * Columns (named in the header row, any case, any order; others are listed once in `unsupported`):
 *   legacyKey (required), product (required), customerEmail, customerName, edition, expireDate, maxActivations,
 *   machines (machine ids separated by `;`).
 * What cannot be read never throws: a problem of the file as a whole (empty, no header, a required column missing)
 * is an ImportProblem of row 0 and no row is read; a problem of a record is an ImportProblem of its line (one a field)
 * and the record is left out of `rows`. Blank lines (and lines of empty cells only) are no records and are skipped.
 */
import Papa from "papaparse";
import { EMAIL_ADDRESS } from "../records/vocabulary";
import {
  type ImportCustomer,
  type ImportMachine,
  type ImportProblem,
  type ImportRow,
  type ReadSource,
  legacyKeyProblem,
} from "./rows";

/** The columns a CSV import reads, as the header row names them (compared without regard to case). */
export const CSV_COLUMNS = [
  "legacyKey",
  "product",
  "customerEmail",
  "customerName",
  "edition",
  "expireDate",
  "maxActivations",
  "machines",
] as const;
export type CsvColumn = (typeof CSV_COLUMNS)[number];
const REQUIRED_COLUMNS: readonly CsvColumn[] = ["legacyKey", "product"];

/** A license's edition: at most this many characters (UTF-16 code units, as the licenses' own field counts). */
export const EDITION_MAX = 64;
/** maxActivations: the licenses' maxClients is a 32-bit integer. */
const MAX_ACTIVATIONS_MAX = 2_147_483_647;
/** A machine id: 1 to 128 visible ASCII characters (no space, no control character). */
const MACHINE_ID = /^[\x21-\x7e]{1,128}$/;
/** The longest customerEmail (its shape: records/vocabulary.ts EMAIL_ADDRESS, as the portal takes one). */
const EMAIL_MAX = 256;
/** expireDate as a day: YYYY-MM-DD (4 or more digits of year, so an absurd year is told as such, not as a typo). */
const DAY = /^(\d{4,})-(\d{2})-(\d{2})$/;
/** expireDate as an instant: date, `T`, hh:mm[:ss[.fraction]] and a zone (Z or ±hh:mm / ±hhmm). */
const INSTANT =
  /^(\d{4,})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;
const YEAR_MIN = 1970;
const YEAR_MAX = 9999;

/** The header row, read: where each known column is, how many cells a record has, what is not read. */
interface CsvHeader {
  columns: Map<CsvColumn, number>;
  width: number;
  unknown: string[];
}

/** Reads a CSV text (first line: the header) into the licenses it lists, and the problems of those it cannot take. */
export function readCsv(text: string): ReadSource {
  const whole = (field: string, messages: string[]): ReadSource => ({
    rows: [],
    errors: messages.map((message) => ({ row: 0, field, message })),
    unsupported: [],
  });
  if (text.replace(/^\uFEFF/, "").trim() === "") return whole("file", ["The CSV file is empty"]);
  // Comma only: the machines column's `;` must never be taken for a delimiter. No header mode and no skipping of
  // empty lines: every line stays a record of its own, so line numbers can be counted (below).
  const parsed = Papa.parse<string[]>(text, { delimiter: ",", header: false, skipEmptyLines: false });
  const records = parsed.data;
  // Quoting errors (an unterminated or malformed quoted field), by record index: the first of each record.
  const broken = new Map<number, string>();
  for (const e of parsed.errors) if (typeof e.row === "number" && !broken.has(e.row)) broken.set(e.row, e.message);

  const header = readHeader(records[0] ?? [], broken.get(0));
  if (Array.isArray(header)) return whole("header", header);

  const rows: ImportRow[] = [];
  const errors: ImportProblem[] = [];
  const keys = new Map<string, number>(); // legacy key -> the line it was first seen on
  // A record's number is the physical line it starts on (the header is line 1). A record spans one line more than
  // the line breaks inside its cells (quoted fields only hold them), so each record starts where the last one ended.
  let next = 2 + lineBreaks(records[0] ?? []);
  for (let i = 1; i < records.length; i++) {
    const cells = records[i]!;
    const line = next;
    next += 1 + lineBreaks(cells);
    if (cells.every((cell) => cell.trim() === "")) continue;
    const quoting = broken.get(i);
    if (quoting !== undefined) {
      // An open quote takes in the rest of the file: papaparse ends the record there.
      const swallowed = next - 1 > line ? `, nor lines ${line + 1} to ${next - 1} that its open quote takes in` : "";
      errors.push({
        row: line,
        field: "row",
        message: `The line's quoting is malformed (${quoting}): it is not read${swallowed}`,
      });
      continue;
    }
    if (cells.length !== header.width) {
      errors.push({
        row: line,
        field: "row",
        message: `The line has ${cells.length} cells, the header ${header.width}`,
      });
      continue;
    }
    const read = readRecord(cells, header, line, keys);
    if (read.problems.length > 0) errors.push(...read.problems);
    else if (read.row) rows.push(read.row);
  }
  const unsupported =
    header.unknown.length > 0 ? [`CSV columns not imported: ${header.unknown.map((c) => `"${c}"`).join(", ")}`] : [];
  return { rows, errors, unsupported };
}

/** The header row's columns, or the problems that leave the file unread. */
function readHeader(cells: string[], quoting: string | undefined): CsvHeader | string[] {
  if (quoting !== undefined) return [`The header row (line 1) cannot be read: ${quoting}`];
  if (cells.every((cell) => cell.trim() === "")) return ["There is no header row: line 1 is blank"];
  const columns = new Map<CsvColumn, number>();
  const unknown: string[] = [];
  const twice = new Set<CsvColumn>();
  cells.forEach((cell, i) => {
    const name = cell.trim();
    const column = CSV_COLUMNS.find((c) => c.toLowerCase() === name.toLowerCase());
    if (column === undefined) unknown.push(name === "" ? `(column ${i + 1}, unnamed)` : name);
    else if (columns.has(column)) twice.add(column);
    else columns.set(column, i);
  });
  const problems: string[] = [];
  const missing = REQUIRED_COLUMNS.filter((c) => !columns.has(c));
  if (missing.length > 0)
    problems.push(
      `The header row (line 1) has no column ${missing.join(" and ")}; it names the columns of ${CSV_COLUMNS.join(", ")}`,
    );
  for (const column of twice) problems.push(`The header row (line 1) names the column ${column} more than once`);
  return problems.length > 0 ? problems : { columns, width: cells.length, unknown };
}

/** One record (with as many cells as the header) as an ImportRow, or its problems, one a field. */
function readRecord(
  cells: string[],
  header: CsvHeader,
  line: number,
  keys: Map<string, number>,
): { row?: ImportRow; problems: ImportProblem[] } {
  const problems: ImportProblem[] = [];
  const problem = (field: CsvColumn, message: string) => problems.push({ row: line, field, message });
  const cell = (column: CsvColumn): string => {
    const i = header.columns.get(column);
    return i === undefined ? "" : (cells[i] ?? "").trim();
  };

  const legacyKey = cell("legacyKey");
  const keyProblem = legacyKey === "" ? "A legacy key is required" : legacyKeyProblem(legacyKey);
  const first = keys.get(legacyKey);
  if (keyProblem !== undefined) problem("legacyKey", keyProblem);
  else if (first !== undefined) problem("legacyKey", `The key is a duplicate of line ${first}`);
  else keys.set(legacyKey, line);

  const product = cell("product");
  if (product === "") problem("product", "A product code is required");

  const email = cell("customerEmail");
  if (email !== "" && (email.length > EMAIL_MAX || !EMAIL_ADDRESS.test(email)))
    problem("customerEmail", `"${email}" is not an e-mail address (name@example.com)`);

  const edition = cell("edition");
  if (edition.length > EDITION_MAX)
    problem("edition", `An edition has at most ${EDITION_MAX} characters (this one ${edition.length})`);

  const expire = readExpireDate(cell("expireDate"));
  if (expire.problem !== undefined) problem("expireDate", expire.problem);

  const maxClients = readMaxActivations(cell("maxActivations"));
  if (typeof maxClients === "string") problem("maxActivations", maxClients);

  const machines = readMachines(cell("machines"));
  if (typeof machines === "string") problem("machines", machines);

  if (problems.length > 0 || typeof maxClients === "string" || typeof machines === "string") return { problems };
  const row: ImportRow = { row: line, legacyKey, product, licensingMode: "activation", maxClients, machines };
  const customer = readCustomer(email, cell("customerName"));
  if (customer) row.customer = customer;
  if (edition !== "") row.edition = edition;
  if (expire.instant !== undefined) row.expireDate = expire.instant;
  return { row, problems };
}

/** The customer of the e-mail and name cells (checked already); none when both are empty. */
function readCustomer(email: string, name: string): ImportCustomer | undefined {
  if (email === "" && name === "") return undefined;
  const customer: ImportCustomer = {};
  if (email !== "") customer.email = email;
  if (name !== "") {
    // The last word is the last name, everything before the last space the first name.
    const split = /^(.*\S)\s+(\S+)$/su.exec(name);
    if (split) {
      customer.firstName = split[1]!;
      customer.lastName = split[2]!;
    } else customer.lastName = name;
  }
  return customer;
}

/**
 * expireDate: empty is perpetual; YYYY-MM-DD is that day at 00:00:00Z; otherwise an ISO 8601 instant with its zone.
 * The instant is given as Date.toISOString writes it (how the licenses' dates are kept and compared). A year before
 * 1970 or after 9999 (of the instant, in UTC) is absurd.
 */
function readExpireDate(value: string): { instant?: string; problem?: string } {
  if (value === "") return {};
  const unreadable = {
    problem: `"${value}" is not a date: write YYYY-MM-DD or an ISO 8601 instant (2030-12-31T23:59:59Z)`,
  };
  const day = DAY.exec(value);
  const full = day ? undefined : INSTANT.exec(value);
  const parts = day ?? full;
  if (!parts) return unreadable;
  const [year, month, date] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (month < 1 || month > 12 || date < 1 || date > daysIn(year, month)) return unreadable;
  let at = Date.UTC(year, month - 1, date);
  if (full) {
    const [hours, minutes, seconds] = [Number(full[4]), Number(full[5]), Number(full[6] ?? 0)];
    if (hours > 23 || minutes > 59 || seconds > 59) return unreadable;
    const millis = Math.floor(Number(`0.${full[7] ?? 0}`) * 1000);
    at += ((hours * 60 + minutes) * 60 + seconds) * 1000 + millis;
    if (full[9] !== undefined) {
      const [offsetHours, offsetMinutes] = [Number(full[10]), Number(full[11])];
      if (offsetHours > 23 || offsetMinutes > 59) return unreadable;
      at -= (full[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
    }
  }
  // Years of more than 4 digits may lie past what a Date holds (NaN): absurd all the same.
  const utcYear = Number.isFinite(at) ? new Date(at).getUTCFullYear() : year;
  if (year < YEAR_MIN || year > YEAR_MAX || utcYear < YEAR_MIN || utcYear > YEAR_MAX)
    return { problem: `"${value}" is an absurd date: the year must lie between ${YEAR_MIN} and ${YEAR_MAX}` };
  return { instant: new Date(at).toISOString() };
}

/** Days of a month (1-12) of a year of the proleptic Gregorian calendar. */
function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** maxActivations: a non-negative integer (empty: 0, unlimited), or the problem. */
function readMaxActivations(value: string): number | string {
  if (value === "") return 0;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > MAX_ACTIVATIONS_MAX)
    return `"${value}" is not a number of activations: a whole number from 0 (unlimited) to ${MAX_ACTIVATIONS_MAX}`;
  return n;
}

/** machines: ids separated by `;` (trimmed, empty ones dropped, the same id once), or the problem naming the bad ids. */
function readMachines(value: string): ImportMachine[] | string {
  const ids = [...new Set(value.split(";").map((id) => id.trim()))].filter((id) => id !== "");
  const bad = ids.filter((id) => !MACHINE_ID.test(id));
  if (bad.length > 0)
    return `A machine id has 1 to 128 visible ASCII characters (no space): ${bad.map((id) => JSON.stringify(id)).join(", ")}`;
  return ids.map((fingerprint) => ({ fingerprint }));
}

/** Line breaks (CRLF, LF or a lone CR) inside a record's cells. */
function lineBreaks(cells: string[]): number {
  let count = 0;
  for (const cell of cells) count += cell.match(/\r\n|\r|\n/g)?.length ?? 0;
  return count;
}
