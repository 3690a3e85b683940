/**
 * Reading JSON answers without trusting them: each reader checks the type it promises, so a body that does not follow
 * the contract becomes a {@link ProtocolError} naming the field instead of a `TypeError` deep in the application.
 */
import { ProtocolError } from "./errors.js";
import { licenseStatusNameValues, licenseTypeNameValues, licensingModeNameValues } from "./gen/openapi.js";
import type { LicenseStatus, LicenseType, LicensingMode } from "./types.js";

/** A JSON object from a body. */
export type JsonObject = Record<string, unknown>;

/** The value as a JSON object, or a ProtocolError naming `what`. */
export function object(value: unknown, what: string): JsonObject {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ProtocolError(`${what} is not an object`);
  return value as JsonObject;
}

/** A required string member. */
export function str(o: JsonObject, key: string, what: string): string {
  const v = o[key];
  if (typeof v !== "string") throw new ProtocolError(`${what}.${key} is missing or not a string`);
  return v;
}

/** An optional string member; null and the empty string (a protobuf default) read as absent. */
export function optStr(o: JsonObject, key: string, what: string): string | undefined {
  const v = o[key];
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") throw new ProtocolError(`${what}.${key} is not a string`);
  return v;
}

/** A required number member. */
export function num(o: JsonObject, key: string, what: string): number {
  const v = o[key];
  if (typeof v !== "number" || !Number.isFinite(v))
    throw new ProtocolError(`${what}.${key} is missing or not a number`);
  return v;
}

/** An optional number member. */
export function optNum(o: JsonObject, key: string, what: string): number | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isFinite(v)) throw new ProtocolError(`${what}.${key} is not a number`);
  return v;
}

/** An optional boolean member. */
export function optBool(o: JsonObject, key: string, what: string): boolean | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "boolean") throw new ProtocolError(`${what}.${key} is not a boolean`);
  return v;
}

/** An array of strings; absent or null reads as empty (the service omits null members). */
export function strings(o: JsonObject, key: string, what: string): string[] {
  const v = o[key];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((s) => typeof s === "string"))
    throw new ProtocolError(`${what}.${key} is not an array of strings`);
  return v as string[];
}

// The enumerations' names in the order of their numbers, as the service's OpenAPI document lists them (generated).
const LICENSING_MODES: readonly LicensingMode[] = licensingModeNameValues;
const LICENSE_TYPES: readonly LicenseType[] = licenseTypeNameValues;
const LICENSE_STATUSES: readonly LicenseStatus[] = licenseStatusNameValues;

/**
 * An enumeration by name or by number: REST writes enumerations as numbers unless `Application:SerializeJSonEnumAsString`
 * is on (SPEC "Wire conventions"), gRPC as the names. Numbers are the CONTRACT section 3 values, i.e. the index.
 */
function enumName<T extends string>(names: readonly T[], value: unknown, what: string): T {
  if (typeof value === "number" && Number.isInteger(value)) {
    const name = names[value];
    if (name !== undefined) return name;
  } else if (typeof value === "string") {
    const name = names.find((n) => n.toLowerCase() === value.toLowerCase());
    if (name !== undefined) return name;
  }
  throw new ProtocolError(`${what} has an unknown value: ${JSON.stringify(value)}`);
}

/** `File` / `Activation` / `Floating` from a name or its number (0, 1, 2). */
export function licensingMode(value: unknown, what = "licensingMode"): LicensingMode {
  return enumName(LICENSING_MODES, value, what);
}

/** `Standard` / `Demo` / `Trial` from a name or its number (0, 1, 2). */
export function licenseType(value: unknown, what = "licenseType"): LicenseType {
  return enumName(LICENSE_TYPES, value, what);
}

/** A license status from its name (CONTRACT section 4 makes `status` a string enum). */
export function licenseStatus(value: unknown, what = "status"): LicenseStatus {
  if (typeof value !== "string") throw new ProtocolError(`${what} is not a status name: ${JSON.stringify(value)}`);
  return enumName(LICENSE_STATUSES, value, what);
}
