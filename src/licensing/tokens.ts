/**
 * License tokens (CONTRACT section 3): `actk_` (activation) or `fltk_` (floating seat) + 24 base62 characters from
 * the CSPRNG. Only their SHA-256 digest and a short prefix for lists are stored; the token itself is handed out once.
 * Free of HTTP: the Management API issues activation tokens by hand here, the licensing runtime will too.
 */
import { and, eq, exists, or, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { BASE62, randomString, sha256Hex } from "../kernel/crypto";
import type { Db } from "../db/client";
import { insertedRow } from "../db/insert-select";
import { tokenIsLive } from "../db/rules";
import { licenseTokens, licenses } from "../db/schema";
import { TOKEN_KINDS, TOKEN_PREFIXES, TokenKind } from "../records/vocabulary";
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
 * same token (a derived token, client-tokens.ts) refreshes its row instead. It returns the stored row, none when the
 * limit is reached (or the license no longer exists). Unexecuted, so a caller can batch it; `digest` is the token's
 * SHA-256 (sha256Hex).
 */
export function activationInsert(db: Db, token: string, digest: string, request: ActivationRequest, now: Date) {
  const stamp = now.toISOString();
  const held = alias(licenseTokens, "t");
  const heldLive = and(eq(held.licenseId, licenses.id), tokenIsLive(stamp, held.expireDate));
  return db
    .insert(licenseTokens)
    .select(
      db
        .select(
          insertedRow(licenseTokens, {
            tokenDigest: digest,
            tokenPrefix: tokenPrefix(token),
            kind: TokenKind.Activation,
            licenseId: licenses.id,
            machineId: request.machineId,
            clientId: request.clientId ?? null,
            clientName: request.clientName ?? null,
            address: request.address ?? null,
            issueDate: stamp,
            expireDate: request.expireDate === "license" ? licenses.expireDate : (request.expireDate ?? null),
            createdAt: stamp,
            updatedAt: stamp,
          }),
        )
        .from(licenses)
        .where(
          and(
            eq(licenses.id, request.licenseId),
            or(
              eq(licenses.maxClients, 0),
              exists(
                db
                  .select({ one: sql`1` })
                  .from(held)
                  .where(and(heldLive, eq(held.machineId, request.machineId))),
              ),
              sql`(${db
                .select({ machines: sql`count(DISTINCT ${held.machineId})` })
                .from(held)
                .where(heldLive)}) < ${licenses.maxClients}`,
            ),
          ),
        ),
    )
    .onConflictDoUpdate({
      target: licenseTokens.tokenDigest,
      set: {
        clientName: sql`coalesce(excluded.client_name, ${licenseTokens.clientName})`,
        address: sql`excluded.address`,
        expireDate: sql`excluded.expire_date`,
        updatedAt: sql`excluded.updated_at`,
      },
    })
    .returning();
}

/** Issues a new random activation token by hand through activationInsert; undefined when the limit is reached. */
export async function issueActivationToken(
  db: Db,
  request: ActivationRequest,
  now: Date,
): Promise<{ row: LicenseTokenRow; token: string } | undefined> {
  const token = generateToken(TokenKind.Activation);
  const row = await activationInsert(db, token, await sha256Hex(token), request, now).get();
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
    kind: f.enumOf("TokenKind", TOKEN_KINDS, { readOnly: true }),
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
