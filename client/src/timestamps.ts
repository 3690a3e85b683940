/**
 * Dates on the two wires: REST sends ISO 8601 strings (SPEC "Wire conventions"), gRPC `google.protobuf.Timestamp`.
 * Results carry `Date`s either way; an absent value stays `undefined`.
 */
import { type Timestamp, timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ProtocolError } from "./errors.js";

/** The `Date` of a Timestamp message; `undefined` when the field was not set. */
export function dateFromTimestamp(timestamp: Timestamp | undefined): Date | undefined {
  return timestamp === undefined ? undefined : timestampDate(timestamp);
}

/** The Timestamp message of a `Date`; `undefined` stays unset. Refuses an invalid date rather than sending garbage. */
export function timestampFromDateValue(date: Date | undefined): Timestamp | undefined {
  if (date === undefined) return undefined;
  if (Number.isNaN(date.getTime())) throw new TypeError("Invalid Date");
  return timestampFromDate(date);
}

/**
 * The `Date` of an ISO 8601 string from a REST body; `undefined` for a missing or null value. `field` names the value
 * in the error when the string is not a date.
 */
export function dateFromIso(value: unknown, field: string): Date | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new ProtocolError(`${field} is not a date string`);
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new ProtocolError(`${field} is not an ISO 8601 date: ${value}`);
  return date;
}
