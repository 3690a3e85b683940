/**
 * License tokens (CONTRACT section 3): `actk_` (activation) or `fltk_` (floating seat) + 24 base62 characters from
 * the CSPRNG. Only their SHA-256 digest and a short prefix for lists are stored; the token itself is handed out once.
 * Free of HTTP: the Management API issues activation tokens by hand here, the licensing runtime will too.
 */
import { eq, sql } from "drizzle-orm";
import { BASE62, randomString, sha256Hex } from "../auth/crypto";
import type { Db } from "../db/client";
import type { Bindings } from "../env";
import { licenseTokens } from "../db/schema";

/** `kind` of a token, index = stored number. */
export const TOKEN_KINDS = ["Activation", "Floating"] as const;
export const TokenKind = { Activation: 0, Floating: 1 } as const;
export type TokenKind = (typeof TokenKind)[keyof typeof TokenKind];

const TOKEN_PREFIXES: Record<TokenKind, string> = { [TokenKind.Activation]: "actk_", [TokenKind.Floating]: "fltk_" };

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
  /** Null: the token lives until it is deleted. */
  expireDate?: string | null;
  /** The client's IP address, when a client asked (none for a token issued by hand). */
  address?: string | null;
}

/**
 * Issues an activation token within the license's `maxClients` (0 = unlimited), counting distinct machines that
 * hold a live token; a machine that already holds one may get another. The limit check and the insert are ONE
 * statement (INSERT … SELECT … WHERE count < max_clients), read against the license row itself, so concurrent
 * requests can never exceed the limit (DESIGN "Reliability": D1 has no interactive transactions).
 * Returns undefined when the limit is reached (or the license no longer exists).
 */
export async function issueActivationToken(db: Db, request: ActivationRequest, now: Date): Promise<{ row: LicenseTokenRow; token: string } | undefined> {
  const token = generateToken(TokenKind.Activation);
  const stamp = now.toISOString();
  const inserted = await db.get<{ id: number } | null>(sql`
    INSERT INTO license_tokens
      (token_digest, token_prefix, kind, license_id, machine_id, client_id, client_name, address, issue_date, expire_date, created_at, updated_at)
    SELECT ${await sha256Hex(token)}, ${tokenPrefix(token)}, ${TokenKind.Activation}, l.id, ${request.machineId}, ${request.clientId ?? null},
           ${request.clientName ?? null}, ${request.address ?? null}, ${stamp}, ${request.expireDate ?? null}, ${stamp}, ${stamp}
    FROM licenses AS l
    WHERE l.id = ${request.licenseId}
      AND (l.max_clients = 0
        OR EXISTS (SELECT 1 FROM license_tokens AS t
                   WHERE t.license_id = l.id AND t.machine_id = ${request.machineId} AND (t.expire_date IS NULL OR t.expire_date > ${stamp}))
        OR (SELECT count(DISTINCT t.machine_id) FROM license_tokens AS t
            WHERE t.license_id = l.id AND (t.expire_date IS NULL OR t.expire_date > ${stamp})) < l.max_clients)
    RETURNING id`);
  if (!inserted) return undefined;
  const row = await db.select().from(licenseTokens).where(eq(licenseTokens.id, inserted.id)).get();
  return row ? { row, token } : undefined;
}

/**
 * Frees the floating seats of a deleted license in its Durable Object. License deletion calls it after the license
 * row is gone: the row's token rows (activations and seats) go with it in the same statement (foreign key cascade),
 * so a delete that fails leaves every client in place, and a seat object that fails to drop afterwards holds only
 * seats of a license that no longer exists, which the object's alarm reclaims.
 */
export async function releaseLicenseSeats(env: Bindings, licenseId: number): Promise<void> {
  await env.LICENSE_SEATS.getByName(String(licenseId)).drop();
}
