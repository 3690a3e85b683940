/** Protobuf fields to and from the services' values: Timestamps, and proto3's empty strings as absent. */
import { timestampFromDate } from "@bufbuild/protobuf/wkt";

/** An ISO time as a Timestamp (absent stays absent). */
export const timestamp = (iso: string | undefined) => (iso ? timestampFromDate(new Date(iso)) : undefined);

/** A proto3 string field: "" (unset) is absent. */
export const opt = (s: string | undefined) => (s === undefined || s === "" ? undefined : s);
