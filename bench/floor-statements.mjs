// The hot paths' own D1 statements, for the benchmark's platform floors (bench/floors.mjs): the SQL the service sends
// for a heartbeat and a validation with a license's bearer token (its logout check as a column), bound to the values
// of the rows the floor Worker seeds. test/bench-floors.test.ts holds them equal to what the service compiles
// (src/licensing/floating.ts seatToBeat, src/licensing/validation.ts licenseToValidate): change the service's read,
// and that test names the text to put here.

/** The heartbeat's read: a floating token by digest, with its license's judged columns. */
export const HEARTBEAT_READ = {
  sql: 'select "license_tokens"."expire_date" as "token_expire_date", "license_tokens"."machine_id" as "token_machine_id", "license_tokens"."client_id" as "token_client_id", "licenses"."id", "licenses"."license_id", "licenses"."user_key", "licenses"."product_id", "licenses"."license_type", "licenses"."edition", "licenses"."licensing_mode", "licenses"."max_clients", "licenses"."issue_date", "licenses"."expire_date", "licenses"."support_expire_date", "licenses"."revoked", "licenses"."features", "licenses"."integrity", (EXISTS (SELECT 1 FROM "revoked_tokens" WHERE "revoked_tokens"."jti" = ?)) from "license_tokens" inner join "licenses" on "licenses"."id" = "license_tokens"."license_id" where ("license_tokens"."token_digest" = ? and "license_tokens"."kind" = ?) limit ?',
  params: ["floor-jti", "floor-seat-digest", 1, 1],
};

/** The validation's read: a license by user key, its product's code, and the live activations of one machine. */
export const VALIDATE_READ = {
  sql: 'select "licenses"."id", "licenses"."license_id", "licenses"."user_key", "licenses"."product_id", "licenses"."license_type", "licenses"."edition", "licenses"."licensing_mode", "licenses"."max_clients", "licenses"."issue_date", "licenses"."expire_date", "licenses"."support_expire_date", "licenses"."revoked", "licenses"."features", "licenses"."integrity", "licenses"."licensee_name", "licenses"."licensee_email", "licenses"."licensee_company", "licenses"."trace", "products"."code", (EXISTS (SELECT 1 FROM "revoked_tokens" WHERE "revoked_tokens"."jti" = ?)), (SELECT json_group_array(json_object(\'licenseId\', "license_tokens"."license_id", \'tokenDigest\', "license_tokens"."token_digest", \'expireDate\', "license_tokens"."expire_date", \'machineId\', "license_tokens"."machine_id"))\n          FROM "license_tokens"\n          WHERE ? = 1 AND "license_tokens"."license_id" = "licenses"."id"\n            AND ("license_tokens"."expire_date" IS NULL OR "license_tokens"."expire_date" > ?)\n            AND CASE WHEN ? IS NOT NULL THEN "license_tokens"."token_digest" = ?\n              ELSE "license_tokens"."machine_id" = ? AND "license_tokens"."client_id" = ? END) as "candidates" from "licenses" inner join "products" on "products"."id" = "licenses"."product_id" where (replace("licenses"."user_key", \'-\', \'\') = ? OR "licenses"."legacy_key_digest" = ?) limit ?',
  params: ["floor-jti", 1, "2026-01-01T00:00:00.000Z", null, null, "floor-machine", "", "FLOORUSERKEY", "", 1],
};

/** The rows the statements find (one product, an Activation license with an activation, a floating token of it). */
export const FLOOR_ROWS = [
  "INSERT INTO products (id, code, name, created_at, updated_at) VALUES (1, 'floor', 'Floor', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')",
  "INSERT INTO licenses (id, license_id, user_key, product_id, license_type, licensing_mode, max_clients, issue_date, features, licensee_name, integrity, created_at, updated_at) VALUES (1, 'lic0123456789', 'FLOOR-USER-KEY', 1, 0, 1, 0, '2025-01-01T00:00:00.000Z', '[]', 'Floor', 'abababababababababababababababababababababababababababababababab', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')",
  "INSERT INTO license_tokens (token_digest, token_prefix, kind, license_id, machine_id, client_id, issue_date, expire_date, created_at, updated_at) VALUES ('floor-activation-digest', 'actk_', 0, 1, 'floor-machine', '', '2025-01-01T00:00:00.000Z', NULL, '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')",
  "INSERT INTO license_tokens (token_digest, token_prefix, kind, license_id, machine_id, client_id, issue_date, expire_date, created_at, updated_at) VALUES ('floor-seat-digest', 'fltk_', 1, 1, 'floor-machine', 'floor-client', '2025-01-01T00:00:00.000Z', '2030-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z')",
];
