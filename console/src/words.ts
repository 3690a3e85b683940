/**
 * What the console shows instead of the API's raw values: field labels in words, enumeration numbers by name,
 * sizes in KiB/MiB, dates in the viewer's locale, and API-key permission bits by name. One dictionary each.
 */
import {
  licenseTypeNameValues,
  licensingModeNameValues,
  logLevelNameValues,
  orderStatusNameValues,
  paymentStatusNameValues,
  tokenKindNameValues,
  traceActionNameValues,
} from "./api/schema";
import type { components } from "./api/schema";

/**
 * Enumerations by property name: the OpenAPI document's named enumerations (src/http/entity.ts namedEnum), each
 * `<Name>Name` component's names in the order of the stored numbers, as openapi-typescript generates them
 * (`npm run console:schema`). Nothing is copied here: a new or renamed value reaches the console with the schema.
 */
export const ENUMS: Readonly<Record<string, readonly string[]>> = {
  licenseType: licenseTypeNameValues,
  licensingMode: licensingModeNameValues,
  kind: tokenKindNameValues,
  action: traceActionNameValues,
  level: logLevelNameValues,
  status: orderStatusNameValues,
  paymentStatus: paymentStatusNameValues,
};

export const LICENSE_TYPES = licenseTypeNameValues;
export const LICENSING_MODES = licensingModeNameValues;
export const ORDER_STATUSES = orderStatusNameValues;
export const PAYMENT_STATUSES = paymentStatusNameValues;

/** A role's name: the document's RoleName. */
export type Role = components["schemas"]["RoleName"];

/** A property's value for display: an enumeration's number as its name. */
export function named(key: string, value: unknown): unknown {
  return typeof value === "number" && ENUMS[key]?.[value] !== undefined ? ENUMS[key][value] : value;
}

/** Field labels in words, by property name. Properties not listed get their name split into words. */
export const LABELS: Readonly<Record<string, string>> = {
  id: "Id",
  licenseId: "License",
  licenseeName: "Licensee",
  licenseeEmail: "Licensee email",
  licenseType: "License type",
  licensingMode: "Licensing mode",
  productId: "Product",
  customerId: "Customer",
  resellerId: "Reseller",
  orderId: "Order",
  templateId: "Template",
  ownerId: "Owner",
  userKey: "User key",
  maxClients: "Max clients",
  activeClientCount: "Clients in use",
  issueDate: "Issued",
  expireDate: "Expires",
  supportExpireDate: "Support until",
  revoked: "Revoked",
  edition: "Edition",
  status: "Status",
  features: "Features",
  isReseller: "Reseller",
  orderNumber: "Number",
  paymentStatus: "Payment",
  createdAt: "Created",
  updatedAt: "Changed",
  createdDate: "Created",
  machineId: "Machine",
  clientId: "Client",
  clientName: "Client name",
  lastHeartbeat: "Last heartbeat",
  releaseNotes: "Release notes",
  stagingPercentage: "Rollout %",
  fileName: "File",
  sourceKind: "Stored",
  size: "Size",
  userName: "User name",
  lastLogIn: "Last sign-in",
  permissions: "Permissions",
  // The overview's counts (GET /v1/info's database section), by table.
  apiKeys: "API keys",
  orderProducts: "Order lines",
  logs: "Log entries",
  events: "Webhook deliveries",
  subscriptions: "Webhook subscriptions",
  emails: "Emails sent",
};

/** A property's label in words. */
export function labelOf(key: string): string {
  const known = LABELS[key];
  if (known) return known;
  const words = key.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

const UNITS = ["KiB", "MiB", "GiB", "TiB"];

/** A byte count in words: "512 B", "1.5 KiB", "12.0 MiB" (binary units). */
export function formatSize(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 1024) return `${bytes} B`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toLocaleString(undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1 })} ${UNITS[unit]}`;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const dateOnly = new Intl.DateTimeFormat(undefined, { dateStyle: "medium" });

/** An ISO date (and time) in the viewer's locale and time zone; anything else as it is. */
export function formatDate(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return /^\d{4}-\d\d-\d\d$/.test(iso) ? dateOnly.format(date) : dateTime.format(date);
}

const day = new Intl.DateTimeFormat(undefined, { month: "numeric", day: "numeric", timeZone: "UTC" });

/** A day of the charts ("2026-11-25", a UTC day) in the viewer's locale, short: "11/25", "25.11.". */
export function formatDay(isoDay: string): string {
  const date = new Date(`${isoDay}T00:00:00Z`);
  return Number.isNaN(date.getTime()) ? isoDay : day.format(date);
}

/** API-key permission bits (SPEC "Authentication" rule 5). */
export const PERMISSIONS = [
  { name: "Read", bit: 1, allows: "GET" },
  { name: "Write", bit: 2, allows: "PUT, PATCH" },
  { name: "Delete", bit: 4, allows: "DELETE" },
  { name: "Create", bit: 8, allows: "POST" },
] as const;

/** The mask of the checked permission names. */
export function permissionMask(names: readonly string[]): number {
  return PERMISSIONS.reduce((mask, p) => (names.includes(p.name) ? mask | p.bit : mask), 0);
}

/** A mask in words: "All", "Read, Create", or "None". */
export function permissionNames(mask: number): string {
  const all = PERMISSIONS.reduce((m, p) => m | p.bit, 0);
  if ((mask & all) === all) return "All";
  const names = PERMISSIONS.filter((p) => (mask & p.bit) !== 0).map((p) => p.name);
  return names.length ? names.join(", ") : "None";
}

/** The figures a release-health sentence reads: GET .../health's data, or its baseline. */
export interface HealthFigures {
  sessions: number;
  crashedSessions: number;
}

const count = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const percent = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

/** A count in the viewer's locale: "1,204". */
export function formatCount(n: number): string {
  return count.format(n);
}

/**
 * The crash-free share of `sessions` with `crashed` among them, in percent, rounded down to one decimal (so one crash
 * in 3,000 sessions reads 99.9, never 100): 97.8. Undefined without sessions.
 */
export function crashFreeRate(sessions: number, crashed: number): number | undefined {
  if (!(sessions > 0)) return undefined;
  // Counted in integers: (1 − crashed / sessions) × 1000 in floating point can land just below a whole number.
  return Math.floor(((sessions - crashed) * 1000) / sessions + 1e-9) / 10;
}

/** A percentage in the viewer's locale, at most one decimal, without its sign: "97.8". */
export function formatPercent(value: number): string {
  return percent.format(value);
}

/** crashFreeRate in words: "97.8"; undefined without sessions. */
export function crashFreePercent(sessions: number, crashed: number): string | undefined {
  const rate = crashFreeRate(sessions, crashed);
  return rate === undefined ? undefined : formatPercent(rate);
}

/**
 * A release's health as a release manager reads it: "2.1.0: 97.8 % crash-free sessions (2.0.3: 99.1 %) over 1,204
 * sessions"; without a baseline (or one without sessions) no parenthesis; without sessions "2.1.0: no sessions
 * reported yet".
 */
export function healthSentence(
  version: string,
  health: HealthFigures,
  baseline?: (HealthFigures & { version: string }) | null,
): string {
  const rate = crashFreePercent(health.sessions, health.crashedSessions);
  if (rate === undefined) return `${version}: no sessions reported yet`;
  const before = baseline ? crashFreePercent(baseline.sessions, baseline.crashedSessions) : undefined;
  const compared = before === undefined ? "" : ` (${baseline!.version}: ${before} %)`;
  const over = `${formatCount(health.sessions)} session${health.sessions === 1 ? "" : "s"}`;
  return `${version}: ${rate} % crash-free sessions${compared} over ${over}`;
}

/** Who halted a release, from its haltReason: "by hand", "by reports", "by its health gate". */
export function haltedBy(reason: unknown): string {
  if (reason === "health") return "by its health gate";
  if (reason === "reports") return "by reports";
  if (reason === undefined || reason === null || reason === "manual") return "by hand";
  return `by ${String(reason)}`;
}
