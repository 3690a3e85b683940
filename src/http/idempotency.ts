/**
 * `Idempotency-Key` on management POSTs (CONTRACT 10). A client that repeats a POST (a timeout, a lost connection)
 * sends the same key, and the repeat changes nothing:
 *
 * - the first request with a key claims it (one row of `idempotency_keys`, scoped to the credential: an API key, or
 *   the user of a bearer token, so no caller can replay another's answer) and runs; its answer, when it succeeded
 *   (2xx), is kept for 24 hours together with a fingerprint of the request (method, path, query, body);
 * - a repeat with the same key and the same request within those 24 hours answers the kept answer again (status,
 *   body, media type, and `Idempotent-Replayed: true`) without running the route;
 * - the same key with another request answers 422;
 * - a repeat while the first still runs answers 409 with `Retry-After` (it does not wait: a Worker holds no lock
 *   across requests, and the client retries as it would after a timeout);
 * - a refused first request (4xx, 5xx) changed nothing and keeps nothing: the key is free again, so a corrected
 *   request may use it.
 *
 * The guard runs it after the credential check on every route that checks roles (auth/guard.ts), and it acts only on
 * POST with the header: every other request (the licensing and update hot paths, GETs) passes at the cost of a method
 * compare. The body is hashed as the route reads it (a pass-through stream, so an artifact upload is never buffered)
 * and what the route left unread is hashed after it; a repeat's body is hashed without being read into memory. A
 * form's boundary is not part of the fingerprint: a client re-encoding the same upload draws a new one.
 * Housekeeping removes expired rows (app/housekeeping.ts).
 */
import { and, eq, isNull, lt, or } from "drizzle-orm";
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv, Principal } from "./app-env";
import type { Db } from "../db/client";
import { idempotencyKeys } from "../db/schema";
import { clock } from "../kernel/clock";
import { toHex } from "../kernel/crypto";
import { ApiError } from "../kernel/errors";
import { decryptSecret, encryptSecret } from "../kernel/secrets";
import { formBoundary } from "./media-type";

export const IDEMPOTENCY_HEADER = "Idempotency-Key";
/** How long a key and its answer are kept. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** A claim whose request never finished (its isolate was stopped) is free again after this long. */
export const IDEMPOTENCY_CLAIM_MS = 10 * 60 * 1000;
/** Largest answer kept for a repeat; management POST answers are small envelopes, far below it. */
const MAX_KEPT_ANSWER_CHARS = 512 * 1024;
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;

/** The header as the OpenAPI document declares it on every POST the layer serves (app/app.ts complete). */
export const IDEMPOTENCY_PARAMETER = {
  name: IDEMPOTENCY_HEADER,
  in: "header",
  required: false,
  schema: { type: "string", minLength: 1, maxLength: 255 },
  description:
    "A key of your choosing (e.g. a UUID) that makes a repeat of this POST safe for 24 hours: the same key with the same request answers the first answer again (with `Idempotent-Replayed: true`) and changes nothing; with another request 422; while the first request still runs 409. Keys are per API key or user; a refused request keeps nothing.",
};

/** Whose keys these are: an API key's own, or a bearer token's user (or license). */
export function scopeOf(principal: Principal): string {
  if (principal.kind === "key") return `key:${principal.keyId ?? principal.keyName ?? "?"}`;
  return principal.userId !== undefined ? `user:${principal.userId}` : `license:${principal.licenseId ?? "?"}`;
}

/**
 * SHA-256 of a request: method, path and query, then the body bytes, fed as the body streams. A form's boundary is
 * left out of the bytes (clients draw a new one for every request, so a repeated upload's body differs only there):
 * every occurrence is cut as the bytes pass, keeping the boundary's length less one byte back across chunks.
 */
class RequestHasher {
  private readonly digest = new crypto.DigestStream("SHA-256");
  private readonly writer = this.digest.getWriter();
  private readonly boundary: Uint8Array | undefined;
  private held = new Uint8Array(0);

  constructor(method: string, url: string, contentType: string | undefined) {
    const u = new URL(url);
    void this.writer.write(new TextEncoder().encode(`${method} ${u.pathname}${u.search}\n`));
    const boundary = formBoundary(contentType);
    this.boundary = boundary === undefined ? undefined : new TextEncoder().encode(boundary);
  }

  write(chunk: Uint8Array): Promise<void> {
    const cut = this.boundary;
    if (!cut) return this.writer.write(chunk);
    const bytes = new Uint8Array(this.held.length + chunk.length);
    bytes.set(this.held);
    bytes.set(chunk, this.held.length);
    const parts: Uint8Array[] = [];
    let from = 0;
    for (let i = bytes.indexOf(cut[0]!); i >= 0 && i + cut.length <= bytes.length; i = bytes.indexOf(cut[0]!, i)) {
      let j = 1;
      while (j < cut.length && bytes[i + j] === cut[j]) j++;
      if (j < cut.length) {
        i++;
        continue;
      }
      parts.push(bytes.subarray(from, i));
      i += cut.length;
      from = i;
    }
    // What could still begin a boundary waits for the next chunk.
    const keep = Math.max(from, bytes.length - (cut.length - 1));
    parts.push(bytes.subarray(from, keep));
    this.held = bytes.slice(keep);
    return Promise.all(parts.filter((p) => p.length > 0).map((p) => this.writer.write(p))).then(() => undefined);
  }

  async finish(rest?: ReadableStreamDefaultReader<Uint8Array>): Promise<string> {
    for (;;) {
      const next = await rest?.read();
      if (!next || next.done) break;
      await this.write(next.value);
    }
    if (this.held.length > 0) await this.writer.write(this.held);
    await this.writer.close();
    return toHex(await this.digest.digest);
  }
}

/** Fingerprint of a request whose body no route will read (a repeat): hashed as it streams. */
async function fingerprintOf(c: Context<AppEnv>): Promise<string> {
  const hasher = new RequestHasher(c.req.method, c.req.url, c.req.header("content-type"));
  return hasher.finish(c.req.raw.body?.getReader());
}

/**
 * Hands the route a body that feeds the hasher as it is read (pull by pull, so nothing is read ahead of the route);
 * `finish` hashes what the route left unread and answers the fingerprint.
 */
function hashAsRead(c: Context<AppEnv>): () => Promise<string> {
  const hasher = new RequestHasher(c.req.method, c.req.url, c.req.header("content-type"));
  const source = c.req.raw.body?.getReader();
  if (source) {
    const body = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          const next = await source.read();
          if (next.done) return controller.close();
          await hasher.write(next.value);
          controller.enqueue(next.value);
        },
      },
      { highWaterMark: 0 },
    );
    c.req.raw = new Request(c.req.raw, { body });
  }
  return () => hasher.finish(source);
}

/** Claims the key (a new row, or one expired or abandoned); true when this request holds it. */
async function claim(db: Db, scope: string, key: string, now: number): Promise<boolean> {
  const createdAt = new Date(now).toISOString();
  const expiresAt = new Date(now + IDEMPOTENCY_TTL_MS).toISOString();
  const abandoned = new Date(now - IDEMPOTENCY_CLAIM_MS).toISOString();
  const rows = await db
    .insert(idempotencyKeys)
    .values({ scope, key, createdAt, expiresAt })
    .onConflictDoUpdate({
      target: [idempotencyKeys.scope, idempotencyKeys.key],
      set: { fingerprint: null, status: null, contentType: null, body: null, createdAt, expiresAt },
      setWhere: or(
        lt(idempotencyKeys.expiresAt, createdAt),
        and(isNull(idempotencyKeys.status), lt(idempotencyKeys.createdAt, abandoned)),
      ),
    })
    .returning({ key: idempotencyKeys.key });
  return rows.length > 0;
}

const claimOf = (scope: string, key: string) => and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.key, key));

/**
 * A kept answer at rest: AES-GCM under Application:EncryptionKey (kernel/secrets.ts), as every stored secret is. The
 * answers of management POSTs hand out secrets once (a new API key and its client secret, a webhook secret, an
 * activation token): a D1 dump or backup must not hold them in clear for the 24 hours a repeat may ask for them.
 */
function sealAnswer(c: Context<AppEnv>, body: string): Promise<string> {
  return encryptSecret(c.get("config")["Application:EncryptionKey"], body);
}

/** A kept answer as it was sent (one kept in clear by an earlier version, a JSON text, is read as it is). */
async function openAnswer(c: Context<AppEnv>, kept: string | null): Promise<string | null> {
  if (kept === null || !kept.startsWith("v1:")) return kept;
  return decryptSecret(c.get("config")["Application:EncryptionKey"], kept);
}

/** Answers a repeat from the kept answer, 422 for another request, 409 while the first still runs. */
async function repeat(c: Context<AppEnv>, db: Db, scope: string, key: string): Promise<Response> {
  const [kept] = await db.select().from(idempotencyKeys).where(claimOf(scope, key));
  if (!kept || kept.status === null) {
    throw new ApiError(409, `A request with ${IDEMPOTENCY_HEADER} ${key} is still running; repeat it later`, {
      "Retry-After": "1",
    });
  }
  if ((await fingerprintOf(c)) !== kept.fingerprint) {
    throw new ApiError(
      422,
      `${IDEMPOTENCY_HEADER} ${key} was already used for another request (another body, method or path); send a new key with a new request`,
    );
  }
  const headers: Record<string, string> = { "Idempotent-Replayed": "true" };
  if (kept.contentType) headers["Content-Type"] = kept.contentType;
  return new Response(await openAnswer(c, kept.body), { status: kept.status, headers });
}

/** The layer (see the file header); the guard adds it after the credential check of role-checked routes. */
export const idempotentPost: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.method !== "POST") return next();
  const key = c.req.header(IDEMPOTENCY_HEADER);
  if (key === undefined) return next();
  if (!KEY_SHAPE.test(key)) {
    throw new ApiError(400, `${IDEMPOTENCY_HEADER} must be 1 to 255 visible ASCII characters`);
  }
  const db = c.get("db");
  const scope = scopeOf(c.get("principal"));
  if (!(await claim(db, scope, key, clock.now().getTime()))) return repeat(c, db, scope, key);

  const fingerprint = hashAsRead(c);
  let kept = false;
  try {
    await next();
    const res = c.res;
    if (res.status >= 200 && res.status < 300) {
      const body = await res.clone().text();
      if (body.length <= MAX_KEPT_ANSWER_CHARS) {
        await db
          .update(idempotencyKeys)
          .set({
            fingerprint: await fingerprint(),
            status: res.status,
            contentType: res.headers.get("content-type"),
            body: await sealAnswer(c, body),
          })
          .where(claimOf(scope, key));
        kept = true;
      }
    }
  } finally {
    // A refusal or failure changed nothing: the key is free for the corrected request.
    if (!kept) await db.delete(idempotencyKeys).where(and(claimOf(scope, key), isNull(idempotencyKeys.status)));
  }
};

/** Housekeeping: keys past their 24 hours. */
export function pruneIdempotencyKeys(db: Db, now: Date) {
  return db.delete(idempotencyKeys).where(lt(idempotencyKeys.expiresAt, now.toISOString()));
}
