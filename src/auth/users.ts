/** Users and their settings as records (SPEC "User"), shared by the user routes and the signed-in user's own routes. */
import { ROLES } from "../http/app-env";
import { MIN_PASSWORD_LENGTH, hashPassword } from "./passwords";
import type { Row } from "../http/repository";
import type { ServiceContext } from "../http/context";
import { userSettings, users } from "../db/schema";
import { DECEPTIVE_CHARACTERS, defineEntity, f } from "../http/entity";

export const User = defineEntity({
  name: "User",
  singular: "user",
  plural: "users",
  table: users,
  fields: {
    id: f.stringId(),
    // No spaces, controls or bidirectional characters: a user name must read as what it is.
    userName: f.string({ max: 256, pattern: new RegExp(`^[^\\s${DECEPTIVE_CHARACTERS}]+$`) }),
    password: f.string({
      min: MIN_PASSWORD_LENGTH,
      max: 256,
      writeOnly: true,
      description: `Write-only; at least ${MIN_PASSWORD_LENGTH} characters; stored as a PBKDF2-SHA256 hash.`,
    }),
    email: f.string({ max: 256 }),
    phoneNumber: f.string({ max: 64 }),
    title: f.string({ max: 64 }),
    firstName: f.string({ max: 128 }),
    lastName: f.string({ max: 128 }),
    department: f.string({ max: 128 }),
    image: f.string({ max: 100_000 }),
    address: f.string({ max: 512 }),
    postalCode: f.string({ max: 32 }),
    region: f.string({ max: 128 }),
    city: f.string({ max: 128 }),
    country: f.string({ max: 128 }),
    countryCode: f.string({ max: 8 }),
    mobile: f.string({ max: 64 }),
    notes: f.string(),
    birthDate: f.date(),
    rank: f.int(),
    customerId: f.int(),
    roles: f.strings({ values: ROLES }),
    lastDismissMessages: f.date(),
    lastLogIn: f.date({ readOnly: true }),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["userName"],
});

export const UserSetting = defineEntity({
  name: "UserSetting",
  singular: "userSetting",
  plural: "userSettings",
  table: userSettings,
  fields: {
    id: f.id(),
    userId: f.stringId(),
    category: f.string({ max: 128 }),
    group: f.string({ max: 128 }),
    name: f.string({ max: 256 }),
    value: f.string(),
    type: f.string({ max: 64 }),
    description: f.string(),
    readOnly: f.bool(),
  },
  required: ["name"],
});

/** Derived columns of a user write: the case-insensitive name and the password hash (never the password). */
export async function userWriteValues(values: Row): Promise<Row> {
  const { password, ...rest } = values;
  const out: Row = { ...rest };
  if (typeof rest["userName"] === "string") out["normalizedUserName"] = rest["userName"].toLowerCase();
  if (typeof password === "string") out["passwordHash"] = await hashPassword(password);
  if (password === null) out["passwordHash"] = null;
  if (Array.isArray(rest["roles"])) out["roles"] = [...new Set(rest["roles"] as string[])];
  return out;
}

/**
 * Whether a write to a user ends that user's bearer tokens: a new password, or a role taken away (a token carries
 * its roles, so it would keep acting with the old ones).
 */
export function endsTokens(values: Row, existing: Row): boolean {
  if (values["passwordHash"] !== undefined) return true;
  if (!Array.isArray(values["roles"])) return false;
  const next = new Set(values["roles"] as string[]);
  return ((existing["roles"] as string[] | null) ?? []).some((role) => !next.has(role));
}

/** Columns a user write changes that are no audit event of their own (derived or bookkeeping). */
const UNAUDITED = new Set([
  "passwordHash",
  "normalizedUserName",
  "updatedAt",
  "tokensValidAfter",
  "lastLogIn",
  "roles",
]);

/** The audit entries of a user write, from the row before and after: never the password or its hash. */
export function auditUserWrite(
  ctx: ServiceContext,
  operation: "create" | "update" | "delete",
  row: Row,
  previous?: Row,
): void {
  const name = String(row["userName"]);
  const about = { targetUserId: row["id"], targetUserName: name };
  if (operation !== "update" || !previous) {
    ctx.log?.audit(operation === "create" ? "UserCreated" : "UserDeleted", `User ${name} ${operation}d`, ctx, {
      ...about,
      roles: row["roles"] ?? [],
    });
    return;
  }
  if (row["passwordHash"] !== previous["passwordHash"])
    ctx.log?.audit("PasswordChanged", `Password of user ${name} changed`, ctx, about);
  const before = JSON.stringify(previous["roles"] ?? []);
  if (JSON.stringify(row["roles"] ?? []) !== before)
    ctx.log?.audit("RolesChanged", `Roles of user ${name} changed`, ctx, {
      ...about,
      from: previous["roles"] ?? [],
      to: row["roles"] ?? [],
    });
  const fields = Object.keys(row).filter(
    (k) => !UNAUDITED.has(k) && JSON.stringify(row[k] ?? null) !== JSON.stringify(previous[k] ?? null),
  );
  if (fields.length > 0) ctx.log?.audit("UserChanged", `User ${name} changed`, ctx, { ...about, fields });
}
