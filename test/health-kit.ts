/**
 * What the release health tests share (release-health.test.ts, health-gate.test.ts, crash-loops.test.ts): products
 * with public releases, session pings through the public route, and the release's health read back once the real
 * queue consumer has written what was sent.
 */
import { expect } from "vitest";
import { newProduct, unique } from "./artifacts-kit";
import { type Answer, admin, call } from "./helpers";

export const INSTALL = "X-Service-Install-Id";

export interface Figures {
  sessions: number;
  crashedSessions: number;
  crashFreeSessions: number | null;
  installs: number;
  crashedInstalls: number;
  crashFreeInstalls: number | null;
}
export interface Health extends Figures {
  from: string;
  to: string;
  days: (Figures & { day: string })[];
  platforms: (Figures & { platform?: string })[];
  baseline: (Figures & { releaseId: number; version: string }) | null;
}

export interface Session {
  id: string;
  status: string;
  startedAt: string;
  durationMs?: number;
}

export const ago = (ms: number) => new Date(Date.now() - ms).toISOString();
export const session = (status = "exited", startedAt = ago(60_000)): Session => ({
  id: `s-${unique()}`,
  status,
  startedAt,
  durationMs: 1000,
});

/** An application product with releases of these versions and MARKER, public and anyone's (no license needed). */
export async function product(...versions: string[]) {
  const p = await newProduct();
  const releases: Record<string, number> = {};
  for (const version of [...versions, MARKER]) {
    const res = await admin("POST", `/v1/products/${p.id}/releases`, {
      productRelease: { version, public: true, requiresMaintenance: false },
    });
    expect(res.status, res.text).toBe(200);
    releases[version] = res.body["productReleaseId"] as number;
  }
  return { productId: p.id, code: p.code, releases };
}

/** A license of the product, its id, public id and user key. */
export async function licenseOf(productId: number): Promise<{ licenseId: string; userKey: string }> {
  const res = await admin("POST", "/v1/licenses", { license: { productId, licensingMode: "File" } });
  expect(res.status, res.text).toBe(200);
  const list = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
  );
  return { licenseId: res.body["licenseId"] as string, userKey: list.body["licenses"][0].userKey as string };
}

export function ping(
  code: string,
  body: unknown,
  o: { install?: string | null; ip?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { "cf-connecting-ip": o.ip ?? "198.51.100.7", ...o.headers };
  if (o.install !== null) headers[INSTALL] = o.install ?? `install-${unique()}`;
  return call("POST", `/v1/updates/${code}/sessions`, { body, headers });
}

export async function health(productId: number, releaseId: number, query = ""): Promise<Health> {
  const res = await admin("GET", `/v1/products/${productId}/releases/${releaseId}/health${query}`);
  expect(res.status, res.text).toBe(200);
  return res.body["data"] as Health;
}

/** The release's health once `reached` holds (the queue delivers within moments), or the last seen. */
export async function settled(productId: number, releaseId: number, reached: (h: Health) => boolean): Promise<Health> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const h = await health(productId, releaseId);
    if (reached(h) || Date.now() > deadline) return h;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The version of each product's marker release, newer than any other. */
export const MARKER = "9.9.9";
const markers = new Map<number, number>();

/**
 * Waits until the queue has counted everything sent before: a marker session of the product's marker release, sent
 * now, is counted after them (the queue delivers in order).
 */
export async function drained(app: {
  productId: number;
  code: string;
  releases: Record<string, number>;
}): Promise<void> {
  const n = (markers.get(app.productId) ?? 0) + 1;
  markers.set(app.productId, n);
  const res = await ping(app.code, { version: MARKER, sessions: [session()] }, { ip: `100.64.0.${n}` });
  expect(res.status, res.text).toBe(202);
  const h = await settled(app.productId, app.releases[MARKER]!, (x) => x.sessions >= n);
  expect(h.sessions, "marker sessions counted").toBe(n);
}
