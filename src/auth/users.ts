/** Users and their settings as records (SPEC "User"), shared by the user routes and the signed-in user's own routes. */
import { ROLES } from "../http/app-env";
import { MIN_PASSWORD_LENGTH, hashPassword } from "./passwords";
import type { Row } from "../http/repository";
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
