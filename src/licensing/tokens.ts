/**
 * License tokens (CONTRACT section 3): `actk_` (activation) or `fltk_` (floating seat) + 24 base62 characters from
 * the CSPRNG. Only their SHA-256 digest and a short prefix for lists are stored; the token itself is handed out once.
 * Free of HTTP: the Management API issues activation tokens by hand here, the licensing runtime will too.
 */
import { eq } from "drizzle-orm";
import { BASE62, randomString, sha256Hex } from "../crypto";
import type { Db } from "../db/client";
import { liveText } from "../db/rules";
import { licenseTokens } from "../db/schema";
import { TOKEN_KINDS, TOKEN_PREFIXES, TokenKind } from "./vocabulary";
import { defineEntity, f } from "../http/entity";
import { licenseReference } from "./license-records";

export { TOKEN_KINDS, TOKEN_PREFIXES, TokenKind };

export type LicenseTokenRow = typeof licenseTokens.$inferSelect;

/** A new token of a kind: its prefix and 24 base62 characters. */
export function generateToken(kind: TokenKind): string {
  return `${TOKEN_PREFIXES[kind]}${randomString(24, BASE62)}`;
}

/** What lists show instead of a token: the kind prefix and four characters. */
export function tokenPrefix(token: string): string {
  return `${token.slice(0, 9)}…`;
}

export interface ActivationRequest {
  /** The license's integer id. */
  licenseId: number;
  machineId: string;
  clientId?: string | null;
  clientName?: string | null;
  /** Null: the token lives until it is deleted; "license": until the license expires. */
  expireDate?: string | null | "license";
  /** The client's IP address, when a client asked (none for a token issued by hand). */
  address?: string | null;
}

/**
 * THE activation-limit statement, for the licensing runtime's activate and the Management API's hand-issued tokens:
 * stores an activation token within the license's `maxClients` (0 = unlimited), counting distinct machines that
 * hold a live token; a machine that already holds one may get another. The limit check and the insert are ONE
 * statement (INSERT … SELECT … WHERE count < max_clients), read against the license row itself, so concurrent
 * requests can never exceed the limit (DESIGN "Reliability": D1 has no interactive transactions). A repeat of the
 * same token (a derived token, client-tokens.ts) refreshes its row instead. Its RETURNING row is empty when the limit is
 * reached (or the license no longer exists). Unexecuted, so a caller can batch it.
 */
export async function activationStatement(
  db: Db,
  token: string,
  request: ActivationRequest,
  now: Date,
): Promise<D1PreparedStatement> {
  const stamp = now.toISOString();
  const fromLicense = request.expireDate === "license";
  return db.$client
    .prepare(
      `INSERT INTO license_tokens
         (token_digest, token_prefix, kind, license_id, machine_id, client_id, client_name, address, issue_date, expire_date, created_at, updated_at)
       SELECT ?1, ?2, ?3, l.id, ?4, ?5, ?6, ?7, ?8, CASE WHEN ?10 = 1 THEN l.expire_date ELSE ?11 END, ?8, ?8
       FROM licenses AS l
       WHERE l.id = ?9
         AND (l.max_clients = 0
           OR EXISTS (SELECT 1 FROM license_tokens AS t WHERE t.license_id = l.id AND t.machine_id = ?4 AND ${liveText("t.expire_date", "?8")})
           OR (SELECT count(DISTINCT t.machine_id) FROM license_tokens AS t
               WHERE t.license_id = l.id AND ${liveText("t.expire_date", "?8")}) < l.max_clients)
       ON CONFLICT (token_digest) DO UPDATE SET
         client_name = coalesce(excluded.client_name, client_name), address = excluded.address,
         expire_date = excluded.expire_date, updated_at = excluded.updated_at
       RETURNING id, created_at, updated_at, expire_date`,
    )
    .bind(
      await sha256Hex(token),
      tokenPrefix(token),
      TokenKind.Activation,
      request.machineId,
      request.clientId ?? null,
      request.clientName ?? null,
      request.address ?? null,
      stamp,
      request.licenseId,
      fromLicense ? 1 : 0,
      fromLicense ? null : (request.expireDate ?? null),
    );
}

/** Issues a new random activation token by hand through activationStatement; undefined when the limit is reached. */
export async function issueActivationToken(
  db: Db,
  request: ActivationRequest,
  now: Date,
): Promise<{ row: LicenseTokenRow; token: string } | undefined> {
  const token = generateToken(TokenKind.Activation);
  const inserted = await (await activationStatement(db, token, request, now)).first<{ id: number }>();
  if (!inserted) return undefined;
  const row = await db.select().from(licenseTokens).where(eq(licenseTokens.id, inserted.id)).get();
  return row ? { row, token } : undefined;
}

/**
 * THE seat drop: frees floating seats in the license's Durable Object, these tokens' or every seat. Used when an
 * administrator deletes a floating token (its digest) or a whole license. License deletion calls it after the
 * license row is gone: the row's token rows (activations and seats) go with it in the same statement (foreign key
 * cascade), so a delete that fails leaves every client in place, and a seat object that fails to drop afterwards
 * holds only seats of a license that no longer exists, which the object's alarm reclaims (the policy refuses a
 * license that is not found).
 */
export async function dropSeats(env: Bindings, licenseRowId: number, tokenDigests?: string[]): Promise<void> {
  await env.LICENSE_SEATS.getByName(String(licenseRowId)).drop(tokenDigests);
}

export const LicenseToken = defineEntity({
  name: "LicenseToken",
  singular: "licenseToken",
  plural: "licenseTokens",
  table: licenseTokens,
  fields: {
    id: f.id(),
    token: f.string({
      readOnly: true,
      description: "Masked (actk_AbCd…): the full token is returned only by the POST that issues it.",
    }),
    kind: f.enumOf(TOKEN_KINDS, { readOnly: true }),
    licenseId: licenseReference(licenseTokens.licenseId),
    machineId: f.string({ max: 256 }),
    clientId: f.string({ max: 256 }),
    clientName: f.string({ max: 256 }),
    address: f.string({ readOnly: true, description: "IP address of the client that obtained the token." }),
    issueDate: f.date({ readOnly: true }),
    expireDate: f.date({ description: "None = valid until deleted." }),
    lastHeartbeat: f.date({ readOnly: true }),
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["machineId"],
});
