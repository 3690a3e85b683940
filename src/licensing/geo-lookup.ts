/**
 * Geolocation of client addresses through Application:GeoLocationService, a URL template with `{ip}` (for example
 * `https://ipapi.co/{ip}/json/` or `http://ip-api.com/json/{ip}`). It fills the missing `geoLocation` of license
 * traces and received reports with the shape the licensing runtime records from `request.cf` (CONTRACT section 3):
 * JSON text `{country, region, city, latitude, longitude, timezone}`, country as its ISO code and coordinates as
 * strings, as `request.cf` gives them. Free of HTTP routes; the two geolocation routes share it.
 */
import { type SQL, and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { licenseTraces, reports } from "../db/schema";
import { ApiError } from "../kernel/errors";

export const GEO_SETTING = "Application:GeoLocationService";
/** How long one lookup may take. */
export const GEO_TIMEOUT_MS = 5000;
/** Distinct addresses looked up per call: each is a subrequest, and Workers cap those per invocation. */
export const MAX_ADDRESSES_PER_CALL = 40;
/** Lookups in flight at once (Workers allow six open connections per invocation). */
const PARALLEL_LOOKUPS = 6;

/** A located address, in the runtime's `request.cf` shape. */
export interface GeoLocation {
  country?: string;
  region?: string;
  city?: string;
  latitude?: string;
  longitude?: string;
  timezone?: string;
}

/** Why one address could not be located. `serviceDown` (timeout, network, 5xx, 429) stops the call's other lookups. */
export class GeoLookupError extends Error {
  constructor(
    message: string,
    readonly serviceDown: boolean,
  ) {
    super(message);
  }
}

/** The configured URL template, or 400 naming the setting when it is missing or unusable. */
export function geoLocationTemplate(template: string | undefined): string {
  if (!template)
    throw new ApiError(400, `${GEO_SETTING} is not set: configure a URL template with {ip} to fill geolocations`);
  let valid = template.includes("{ip}") && /^https?:\/\//i.test(template);
  try {
    new URL(template.replaceAll("{ip}", "127.0.0.1"));
  } catch {
    valid = false;
  }
  if (!valid)
    throw new ApiError(400, `${GEO_SETTING} must be an http(s) URL template containing {ip}, got "${template}"`);
  return template;
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const IPV6 = /^[0-9A-Fa-f:.]{2,45}$/;

/** Only real addresses are put into the service's URL: a stored client IP is whatever the client claimed. */
export function isIpAddress(value: string): boolean {
  return IPV4.test(value) || (value.includes(":") && IPV6.test(value));
}

type Json = Record<string, unknown>;

function text(body: Json, ...keys: string[]): string | undefined {
  for (const key of keys) {
    const value = body[key];
    if (typeof value === "string" && value.trim() !== "") return value.trim();
    if (typeof value === "number" && Number.isFinite(value)) return String(value);
  }
  return undefined;
}

/**
 * Reads the common answer shapes: the runtime's own, ipapi.co, ip-api.com, ipinfo.io and ipwho.is. An answer that
 * flags a failure (`status: "fail"`, `error`, `success: false`) or holds no location is a bad answer.
 */
export function parseGeoAnswer(body: unknown, ip: string): GeoLocation {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new GeoLookupError(`the answer for ${ip} is not a JSON object`, false);
  const answer = body as Json;
  if (
    answer["status"] === "fail" ||
    answer["success"] === false ||
    answer["error"] === true ||
    typeof answer["error"] === "string"
  ) {
    const reason =
      text(answer, "message", "reason") ?? (typeof answer["error"] === "string" ? answer["error"] : "no reason given");
    throw new GeoLookupError(`the service could not locate ${ip}: ${reason}`, false);
  }
  const [locLatitude, locLongitude] = (text(answer, "loc") ?? "").split(",");
  const zone = answer["timezone"];
  const location: GeoLocation = {
    country: text(answer, "countryCode", "country_code", "country"),
    region: text(answer, "regionName", "region_name", "region"),
    city: text(answer, "city"),
    latitude: text(answer, "latitude", "lat") ?? (locLatitude || undefined),
    longitude: text(answer, "longitude", "lon", "lng") ?? (locLongitude || undefined),
    timezone:
      text(answer, "timezone", "time_zone") ??
      (typeof zone === "object" && zone !== null ? text(zone as Json, "id") : undefined),
  };
  const found = Object.fromEntries(Object.entries(location).filter(([, v]) => v !== undefined)) as GeoLocation;
  if (!found.country && !found.region && !found.city && !found.latitude)
    throw new GeoLookupError(`the answer for ${ip} holds no location`, false);
  return found;
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
}

/** Locates one address through the service; GeoLookupError says why not. */
export async function lookupGeoLocation(
  template: string,
  ip: string,
  timeoutMs = GEO_TIMEOUT_MS,
): Promise<GeoLocation> {
  if (!isIpAddress(ip)) throw new GeoLookupError(`"${ip}" is not an IP address`, false);
  let response: Response;
  try {
    response = await fetch(template.replaceAll("{ip}", encodeURIComponent(ip)), {
      headers: { accept: "application/json" },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (e) {
    if (isTimeout(e))
      throw new GeoLookupError(`the geolocation service did not answer within ${timeoutMs / 1000} s`, true);
    throw new GeoLookupError(
      `the geolocation service could not be reached: ${e instanceof Error ? e.message : String(e)}`,
      true,
    );
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new GeoLookupError(
      `the geolocation service answered ${response.status} for ${ip}`,
      response.status >= 500 || response.status === 429,
    );
  }
  let body: unknown;
  try {
    body = JSON.parse(await response.text());
  } catch (e) {
    if (isTimeout(e))
      throw new GeoLookupError(`the geolocation service did not answer within ${timeoutMs / 1000} s`, true);
    throw new GeoLookupError(`the answer for ${ip} is not JSON`, false);
  }
  return parseGeoAnswer(body, ip);
}

/** Records whose geolocation can be filled. */
export type GeoTarget = "traces" | "reports";

export interface GeoFillResult {
  /** Records that received a geolocation. */
  updated: number;
  /** Addresses that could not be located (their records keep no geolocation). */
  failed: number;
  /** Why, one line per failed address (the first few). */
  errors: string[];
  /** Whether more addresses are missing a geolocation than one call looks up. */
  more: boolean;
}

function targetColumns(target: GeoTarget): { id: SQLiteColumn; ip: SQLiteColumn; geo: SQLiteColumn } {
  return target === "traces"
    ? { id: licenseTraces.id, ip: licenseTraces.clientIp, geo: licenseTraces.geoLocation }
    : { id: reports.id, ip: reports.address, geo: reports.geoLocation };
}

function setGeoLocation(db: Db, target: GeoTarget, geoLocation: string, where: SQL | undefined) {
  return target === "traces"
    ? db.update(licenseTraces).set({ geoLocation }).where(where).returning({ id: licenseTraces.id })
    : db.update(reports).set({ geoLocation }).where(where).returning({ id: reports.id });
}

/**
 * Fills the missing geolocation of traces or reports (only `ids` when given): one lookup per distinct address, at
 * most MAX_ADDRESSES_PER_CALL per call, the records of each located address updated in one batch. A failing
 * address is reported and skipped; a failing service (timeout, unreachable, 5xx) ends the lookups of this call.
 */
export async function fillGeoLocations(
  db: Db,
  template: string,
  target: GeoTarget,
  ids: readonly number[] | undefined,
  timeoutMs = GEO_TIMEOUT_MS,
): Promise<GeoFillResult> {
  const columns = targetColumns(target);
  const table = target === "traces" ? licenseTraces : reports;
  const missing = and(
    isNull(columns.geo),
    isNotNull(columns.ip),
    ids ? sql`${columns.id} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))` : undefined,
  );
  const found = await db
    .selectDistinct({ ip: columns.ip })
    .from(table)
    .where(missing)
    .orderBy(columns.ip)
    .limit(MAX_ADDRESSES_PER_CALL + 1);
  const addresses = found.map((r) => String(r.ip)).slice(0, MAX_ADDRESSES_PER_CALL);

  const located = new Map<string, GeoLocation>();
  const errors: string[] = [];
  let stoppedBy: string | undefined;
  for (let start = 0; start < addresses.length && !stoppedBy; start += PARALLEL_LOOKUPS) {
    const chunk = addresses.slice(start, start + PARALLEL_LOOKUPS);
    const results = await Promise.allSettled(chunk.map((ip) => lookupGeoLocation(template, ip, timeoutMs)));
    results.forEach((result, i) => {
      const ip = chunk[i] as string;
      if (result.status === "fulfilled") return void located.set(ip, result.value);
      const error =
        result.reason instanceof GeoLookupError ? result.reason : new GeoLookupError(String(result.reason), true);
      errors.push(`${ip}: ${error.message}`);
      if (error.serviceDown) stoppedBy = error.message;
    });
  }
  const unattempted = addresses.length - located.size - errors.length;
  if (stoppedBy && unattempted > 0) errors.push(`${unattempted} more not tried: ${stoppedBy}`);

  const updates = [...located].map(([ip, geo]) =>
    setGeoLocation(db, target, JSON.stringify(geo), and(eq(columns.ip, ip), missing)),
  );
  const changed =
    updates.length > 0 ? await db.batch(updates as [(typeof updates)[number], ...(typeof updates)[number][]]) : [];
  return {
    updated: changed.reduce((n, rows) => n + rows.length, 0),
    failed: addresses.length - located.size,
    errors: errors.slice(0, 5),
    more: found.length > MAX_ADDRESSES_PER_CALL,
  };
}
