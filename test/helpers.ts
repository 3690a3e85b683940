/** Drives the Worker through its public interface (`exports.default.fetch`), as a client would. */
import { exports } from "cloudflare:workers";
import type { JsonBody } from "./json-body.ts";

/** The administrator and key that vitest.config.ts configures (Application:AdminUsername/Password/ApiKey). */
export const ADMIN = { username: "admin", password: "Admin-12345678", key: "api_TestAdminKey00000000000000000000" };
export const BASE = "https://licensing.test";

export interface CallOptions {
  key?: string;
  token?: string;
  body?: unknown;
  /** A raw body sent as is (malformed JSON tests). */
  raw?: string;
  headers?: Record<string, string>;
  /** What Cloudflare's edge says of the request (`request.cf`: the client's location, its network). */
  cf?: Record<string, unknown>;
}

export interface Answer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

/** One HTTP call; the JSON body (if any) parsed. */
export async function call<T = JsonBody>(method: string, path: string, options: CallOptions = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers["x-api-key"] = options.key;
  if (options.token !== undefined) headers["authorization"] = `Bearer ${options.token}`;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type"))
    headers["content-type"] = "application/json";
  const res = await exports.default.fetch(`${BASE}${path}`, {
    method,
    headers,
    body,
    ...(options.cf ? { cf: options.cf as RequestInit["cf"] } : {}),
  });
  const text = await res.text();
  let parsed: unknown;
  if (text && (res.headers.get("content-type") ?? "").includes("json")) parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, text, body: parsed as T };
}

/** Calls with the administrator's API key. */
export function admin<T = JsonBody>(method: string, path: string, body?: unknown): Promise<Answer<T>> {
  return call<T>(method, path, { key: ADMIN.key, ...(body !== undefined ? { body } : {}) });
}

/** Signs in with a user name and password; returns the bearer token. */
export async function login(username = ADMIN.username, password = ADMIN.password): Promise<string> {
  const res = await call("POST", "/v1/auth/login", { body: { username, password } });
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${res.text}`);
  return res.body["token"] as string;
}

/** Creates a user with roles and an API key with the given permission bits; returns the key. */
export async function keyFor(
  roles: string[],
  permissions = 15,
  userName = `u${crypto.randomUUID().slice(0, 8)}`,
): Promise<string> {
  const user = await admin("POST", "/v1/users", { user: { userName, password: "Secret#123456", roles } });
  if (user.status !== 200) throw new Error(`user: ${user.status} ${user.text}`);
  const key = await admin("POST", "/v1/api-keys", {
    apiKey: { name: `${userName} key`, ownerId: user.body["userId"], permissions },
  });
  if (key.status !== 200) throw new Error(`key: ${key.status} ${key.text}`);
  return key.body["key"] as string;
}

/**
 * Sets a service setting the way `PUT /v1/settings` stores it (a row of the settings table) and makes it visible at
 * once; `null` removes the row so the environment or default applies again.
 */
export async function setSetting(name: string, value: string | null): Promise<void> {
  const { env } = await import("cloudflare:workers");
  const { invalidateConfig } = await import("../src/kernel/config");
  const now = new Date().toISOString();
  if (value === null) await env.DB.prepare("DELETE FROM settings WHERE name = ?").bind(name).run();
  else
    await env.DB.prepare(
      "INSERT INTO settings (name, value, read_only, created_at, updated_at) VALUES (?, ?, 0, ?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    )
      .bind(name, value, now, now)
      .run();
  invalidateConfig();
}

/** Counts the rows of a table (to prove that a refused request wrote nothing). */
export async function countRows(table: string): Promise<number> {
  const { env } = await import("cloudflare:workers");
  const row = await env.DB.prepare(`SELECT count(*) AS n FROM ${table}`).first<{ n: number }>();
  return row?.n ?? 0;
}

/**
 * Waits until the trace queue has written `n` traces of a license (integer id), and answers their actions in order.
 * Traces reach D1 through the TRACES queue (licensing/traces.ts), whose local consumer runs a batch when it is full
 * or after max_batch_timeout (5 s): a test reads them once they are there, never right after the operation.
 */
export async function queuedTraces(licenseId: number, n: number, timeoutMs = 20_000): Promise<number[]> {
  const { env } = await import("cloudflare:workers");
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { results } = await env.DB.prepare("SELECT action FROM license_traces WHERE license_id = ? ORDER BY id")
      .bind(licenseId)
      .all<{ action: number }>();
    if (results.length >= n || Date.now() > deadline) return results.map((r) => r.action);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The service's clock for a test file: `move(ms)` stops it that far ahead of real time (moves add up within a test;
 * a stopped clock lets tests compare exact instants), and it runs in real time again after each test. The Worker
 * shares the test's isolate, so it sees the moved clock.
 */
export async function movableClock(): Promise<{ move(ms: number): void }> {
  const { clock } = await import("../src/kernel/clock");
  const { afterEach } = await import("vitest");
  const real = clock.now;
  let ahead = 0;
  afterEach(() => {
    clock.now = real;
    ahead = 0;
  });
  return {
    move(ms: number) {
      ahead += ms;
      const at = real().getTime() + ahead;
      clock.now = () => new Date(at);
    },
  };
}
