/**
 * The customer portal's API (/v1/portal/*, CONTRACT section 12; src/portal/): sign-in by user key or a one-time
 * emailed link into a session cookie of its own, and a customer's licenses, machines, downloads, orders and licensee
 * name, never another customer's. Driven through the Worker's HTTP routes only.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { ADMIN, type Answer, BASE, admin, call, movableClock, setSetting } from "./helpers";
import { newRelease, upload, hashesOf, bytesOf } from "./artifacts-kit";
import { emitted, subscribe } from "./webhooks-kit";

const clock = await movableClock();
const COOKIE = "__Host-portal-session";

let ipSeq = 0;
/** A fresh client address per use, so login protection of one test never meets another's. */
const freshIp = () => `198.51.${Math.floor(++ipSeq / 250) + 10}.${(ipSeq % 250) + 1}`;

let seq = 0;
const tag = () => `${Date.now().toString(36)}${++seq}`;

interface World {
  customerId: number;
  email: string;
  licenseId: string;
  licenseRowId: number;
  userKey: string;
  second: { licenseId: string; userKey: string };
  orderNumber: string;
  productCode: string;
  machines: string[];
}

async function activate(userKey: string, machineId: string) {
  const res = await call("POST", "/v1/license/activate", { body: { userKey, machineId }, key: ADMIN.key });
  expect(res.status, res.text).toBe(200);
}

async function newLicense(values: Record<string, unknown>) {
  const created = await admin("POST", "/v1/licenses", { license: values });
  expect(created.status, created.text).toBe(200);
  const id = created.body["id"] as number;
  const listed = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${id}`)}&select=userKey`);
  return { id, licenseId: created.body["licenseId"] as string, userKey: listed.body["licenses"][0].userKey as string };
}

/** A customer with an email, an order, two Activation licenses of an application with a published win-x64 build. */
async function world(machines = 2, productId?: number, productCode?: string): Promise<World> {
  const t = tag();
  const email = `buyer-${t}@example.com`;
  const customer = await admin("POST", "/v1/customers", { customer: { firstName: "Ann", lastName: t, email } });
  expect(customer.status, customer.text).toBe(200);
  const customerId = customer.body["customerId"] as number;
  let code = productCode;
  let pid = productId;
  if (pid === undefined) {
    const release = await newRelease("1.0.0");
    pid = release.productId;
    code = release.code;
    expect((await upload(release.path, bytesOf(2048, 7))).status).toBe(201);
    const published = await admin("PUT", `/v1/products/${release.productId}/releases`, {
      productRelease: { id: release.releaseId, public: true },
    });
    expect(published.status, published.text).toBe(200);
    const renewal = await admin("PUT", "/v1/products", {
      product: { id: pid, renewalUrl: "https://shop.example.com/renew" },
    });
    expect(renewal.status, renewal.text).toBe(200);
  }
  const order = await admin("POST", "/v1/orders", { order: { customerId, total: 99, currency: "EUR" } });
  expect(order.status, order.text).toBe(200);
  const orderId = order.body["orderId"] as number;
  const orderNumber = (await admin("GET", `/v1/orders?filter=${encodeURIComponent(`id == ${orderId}`)}`)).body[
    "orders"
  ][0].orderNumber as string;
  const base = { productId: pid, customerId, licensingMode: "Activation", maxClients: 10, edition: "Standard" };
  const first = await newLicense({ ...base, licenseeName: "Ann Original" });
  const second = await newLicense(base);
  const ids = Array.from({ length: machines }, (_, i) => `machine-${t}-${i}`);
  for (const m of ids) await activate(first.userKey, m);
  return {
    customerId,
    email,
    licenseId: first.licenseId,
    licenseRowId: first.id,
    userKey: first.userKey,
    second,
    orderNumber,
    productCode: code!,
    machines: ids,
  };
}

interface Session {
  res: Answer;
  cookie: string;
  csrf: string;
  setCookie: string;
}

function sessionOf(res: Answer): Session {
  const setCookie = res.headers.get("set-cookie") ?? "";
  const secret = new RegExp(`${COOKIE}=([^;]+)`).exec(setCookie)?.[1];
  return { res, setCookie, cookie: `${COOKIE}=${secret}`, csrf: res.body?.["csrfToken"] as string };
}

async function signIn(userKey: string, ip = freshIp()): Promise<Session> {
  return sessionOf(
    await call("POST", "/v1/portal/sign-in", { body: { userKey }, headers: { "cf-connecting-ip": ip } }),
  );
}

/** A call in a portal session (cookie and CSRF token). */
function as(s: Session, method: string, path: string, body?: unknown) {
  return call(method, path, {
    headers: { cookie: s.cookie, "x-csrf-token": s.csrf },
    ...(body !== undefined ? { body } : {}),
  });
}

/** The sign-in email most recently queued to `to`, and the link in it. */
async function linkSentTo(to: string): Promise<string> {
  return vi.waitFor(
    async () => {
      const row = await env.DB.prepare("SELECT body FROM email_outbox WHERE to_address = ? ORDER BY id DESC LIMIT 1")
        .bind(to)
        .first<{ body: string }>();
      const link = /https?:\/\/\S+\/v1\/portal\/sign-in\/[0-9A-Za-z]{32}/.exec(row?.body ?? "")?.[0];
      if (!link) throw new Error("no sign-in email yet");
      return link;
    },
    { timeout: 5000, interval: 50 },
  );
}

const pathOf = (url: string) => new URL(url).pathname;

describe("customer portal sign-in by user key", () => {
  it("opens a session cookie like the console's, scoped to the license's customer; sign-out ends it", async () => {
    const w = await world(1);
    const s = await signIn(w.userKey.toLowerCase());
    expect(s.res.status, `sign-in ${s.res.text}`).toBe(200);
    expect(s.setCookie).toMatch(/^__Host-portal-session=pts_[0-9A-Za-z]+;/);
    for (const flag of [/HttpOnly/, /Secure/, /SameSite=Strict/, /Path=\//]) expect(s.setCookie).toMatch(flag);
    expect(s.res.body).toMatchObject({ success: true, signedIn: true, signedInWith: "userKey" });
    expect(s.res.body["customer"]).toMatchObject({ email: w.email });
    expect(s.csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const me = await call("GET", "/v1/portal/me", { headers: { cookie: s.cookie } });
    expect(me.status, `${me.text} ${s.cookie} ${s.setCookie}`).toBe(200);
    expect(me.body["csrfToken"]).toBe(s.csrf);

    const list = await as(s, "GET", "/v1/portal/licenses");
    expect(list.status, list.text).toBe(200);
    const ids = list.body["licenses"].map((l: { licenseId: string }) => l.licenseId).sort();
    expect(ids).toEqual([w.licenseId, w.second.licenseId].sort());
    const one = list.body["licenses"].find((l: { licenseId: string }) => l.licenseId === w.licenseId);
    expect(one, list.text).toMatchObject({
      activeClientCount: 1,
      renewalUrl: "https://shop.example.com/renew",
      userKey: w.userKey,
    });

    const detail = await as(s, "GET", `/v1/portal/licenses/${w.licenseId}`);
    expect(detail.body["license"]["machines"].map((m: { machineId: string }) => m.machineId)).toEqual(w.machines);
    expect(detail.body["license"]["deactivations"]).toMatchObject({ used: 0, limit: 3 });

    const signIns = await env.DB.prepare("SELECT properties FROM logs WHERE message = ? AND category = 'Audit'")
      .bind(`Customer portal sign-in with the user key of ${w.licenseId}`)
      .all<{ properties: string }>();
    expect(JSON.parse(signIns.results[0]!.properties)).toMatchObject({
      event: "PortalSignIn",
      actor: { kind: "customer", customerId: w.customerId },
    });

    const out = await as(s, "POST", "/v1/portal/sign-out");
    expect(out.status, out.text).toBe(200);
    expect(out.headers.get("set-cookie")).toMatch(/Max-Age=0/);
    expect((await as(s, "GET", "/v1/portal/licenses")).status).toBe(401);
  });

  it("a revoked license's key signs in to nothing, and ends the sessions it opened; a malformed key is a 400", async () => {
    const w = await world(0);
    const before = await signIn(w.userKey);
    expect(before.res.status).toBe(200);
    const revoked = await admin("PUT", "/v1/licenses", { license: { id: w.licenseRowId, revoked: true } });
    expect(revoked.status, revoked.text).toBe(200);
    const refused = await signIn(w.userKey);
    expect(refused.res.status).toBe(401);
    expect(refused.res.body["message"]).toBe("This user key does not sign in to the customer portal.");
    expect(refused.setCookie).toBe("");
    expect((await as(before, "GET", "/v1/portal/licenses")).status).toBe(401);
    // The customer's other license still signs in, and the revoked one is not among theirs.
    const other = await signIn(w.second.userKey);
    const list = await as(other, "GET", "/v1/portal/licenses");
    expect(list.body["licenses"].map((l: { licenseId: string }) => l.licenseId)).toEqual([w.second.licenseId]);

    const sessions = await env.DB.prepare("SELECT count(*) AS n FROM portal_credentials").first<{ n: number }>();
    // Neither a user key (Crockford base32) nor a legacy key (8 to 256 printable characters: CONTRACT 16).
    for (const bad of ["UUUUU-U", "AB", "x".repeat(300), "tab\u0007key-text"]) {
      const res = await call("POST", "/v1/portal/sign-in", { body: { userKey: bad } });
      expect(res.status, bad).toBe(400);
      if (bad.length < 200) expect(res.body["message"]).toMatch(/user key is malformed/);
    }
    // What could be a legacy key is looked up, and names nothing here.
    const unknown = await call("POST", "/v1/portal/sign-in", { body: { userKey: "not a key!" } });
    expect(unknown.status).toBe(401);
    const none = await call("POST", "/v1/portal/sign-in", { body: {} });
    expect(none.status).toBe(400);
    expect(none.body["message"]).toMatch(/one of userKey, email or linkToken/);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM portal_credentials").first<{ n: number }>()).toEqual(
      sessions,
    );
  });

  it("blocks sign-in attempts past IpFiltering:AuthenticationProtection:MaxFailedAttempts, the right key too", async () => {
    const w = await world(0);
    const ip = freshIp();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await signIn(`ZZZZZ-ZZZZZ-ZZZZZ-ZZZZZ-ZZZZ${i}`, ip)).res.status);
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses[5]).toBe(500);
    const blocked = await signIn(w.userKey, ip);
    expect(blocked.res.status).toBe(500);
    expect(blocked.res.body["message"]).toMatch(/Too many failed logins/);
    expect(blocked.setCookie).toBe("");
    // An emailed link cannot be asked for from the blocked address either.
    const mailed = await call("POST", "/v1/portal/sign-in", {
      body: { email: w.email },
      headers: { "cf-connecting-ip": ip },
    });
    expect(mailed.status).toBe(500);
    expect(mailed.body["message"]).toMatch(/Too many failed logins/);
    // Another address is not blocked.
    expect((await signIn(w.userKey)).res.status).toBe(200);
  });
});

describe("customer portal sign-in by email", () => {
  it("sends a one-time link that works once and expires after Portal:SignInLinkMinutes; unknown emails answer the same", async () => {
    const w = await world(0);
    const asked = await call("POST", "/v1/portal/sign-in", { body: { email: w.email.toUpperCase() } });
    expect(asked.status, asked.text).toBe(200);
    expect(asked.body).toMatchObject({ signedIn: false });
    expect(asked.headers.get("set-cookie")).toBeNull();
    const unknown = await call("POST", "/v1/portal/sign-in", { body: { email: `nobody-${tag()}@example.com` } });
    expect(unknown.status).toBe(200);
    expect(unknown.body).toEqual(asked.body);
    const malformed = await call("POST", "/v1/portal/sign-in", { body: { email: "not-an-email" } });
    expect(malformed.status).toBe(400);
    expect(malformed.body["message"]).toMatch(/email address is malformed/);

    const link = pathOf(await linkSentTo(w.email));
    // The link's token is no session: as the cookie, it opens nothing.
    const token = link.split("/").pop()!;
    expect((await call("GET", "/v1/portal/me", { headers: { cookie: `${COOKIE}=${token}` } })).status).toBe(401);
    expect((await call("GET", "/v1/portal/me", { headers: { cookie: `${COOKIE}=pts_${token}` } })).status).toBe(401);
    // Opening the link spends nothing and signs in no one: a browser goes on to the page, which asks first.
    const opened = await exports.default.fetch(`${BASE}${link}`, {
      headers: { "cf-connecting-ip": freshIp() },
      redirect: "manual",
    });
    expect(opened.status).toBe(303);
    expect(opened.headers.get("location")).toBe(`/portal/#link=${token}`);
    expect(opened.headers.get("set-cookie")).toBeNull();
    // The page shows whose account it is (as often as asked: still nothing spent).
    for (let i = 0; i < 2; i++) {
      const looked = await call("GET", link, {
        headers: { accept: "application/json", "cf-connecting-ip": freshIp() },
      });
      expect(looked.status, looked.text).toBe(200);
      expect(looked.body).toMatchObject({ customer: { email: w.email } });
      expect(looked.headers.get("set-cookie")).toBeNull();
    }
    // A page of another site cannot sign the visitor in with it (login CSRF): refused, and the link stays live.
    const forgeries: Record<string, string>[] = [
      { origin: "https://attacker.example" },
      { "sec-fetch-site": "cross-site" },
    ];
    for (const headers of forgeries) {
      const forged = await call("POST", "/v1/portal/sign-in", { body: { linkToken: token }, headers });
      expect(forged.status, forged.text).toBe(403);
      expect(forged.body["message"]).toMatch(/customer portal's own page/);
      expect(forged.headers.get("set-cookie")).toBeNull();
    }
    const asForm = await exports.default.fetch(`${BASE}/v1/portal/sign-in`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: JSON.stringify({ linkToken: token }),
    });
    expect(asForm.status).toBe(415);
    expect(asForm.headers.get("set-cookie")).toBeNull();
    // The customer confirms on the page: signed in.
    const used = await call("POST", "/v1/portal/sign-in", {
      body: { linkToken: token },
      headers: { "cf-connecting-ip": freshIp(), origin: new URL(BASE).origin, "sec-fetch-site": "same-origin" },
    });
    expect(used.status, used.text).toBe(200);
    expect(used.body).toMatchObject({ signedIn: true, signedInWith: "email", customer: { email: w.email } });
    const s = sessionOf(used);
    const me = await call("GET", "/v1/portal/me", { headers: { cookie: s.cookie } });
    expect(me.status, me.text).toBe(200);
    expect(me.body).toMatchObject({ signedInWith: "email", customer: { email: w.email } });
    const list = await as(s, "GET", "/v1/portal/licenses");
    expect(list.body["licenses"]).toHaveLength(2);

    // Twice: refused, looked at or used.
    for (const again of [
      await call("GET", link, { headers: { accept: "application/json", "cf-connecting-ip": freshIp() } }),
      await call("POST", "/v1/portal/sign-in", {
        body: { linkToken: token },
        headers: { "cf-connecting-ip": freshIp() },
      }),
    ]) {
      expect(again.status).toBe(401);
      expect(again.body["message"]).toMatch(/unknown, expired or already used/);
      expect(again.headers.get("set-cookie")).toBeNull();
    }
    const badLink = await exports.default.fetch(`${BASE}/v1/portal/sign-in/not-a-token`, { redirect: "manual" });
    expect(badLink.headers.get("location")).toBe("/portal/#link-refused");

    // After Portal:SignInLinkMinutes (15): refused.
    await call("POST", "/v1/portal/sign-in", { body: { email: w.email } });
    const late = pathOf(
      await vi.waitFor(async () => {
        const l = await linkSentTo(w.email);
        if (pathOf(l) === link) throw new Error("the new email is not there yet");
        return l;
      }),
    );
    clock.move(15 * 60_000 + 1000);
    const expired = await call("GET", late, { headers: { accept: "application/json", "cf-connecting-ip": freshIp() } });
    expect(expired.status).toBe(401);
    const spentLate = await call("POST", "/v1/portal/sign-in", {
      body: { linkToken: late.split("/").pop() },
      headers: { "cf-connecting-ip": freshIp() },
    });
    expect(spentLate.status).toBe(401);
  });
});

describe("customer portal scope", () => {
  it("walks every portal route with another customer's ids: 404, never their data, nothing changed", async () => {
    const mine = await world(1);
    const theirs = await world(2);
    const s = await signIn(mine.userKey);
    expect(s.res.status).toBe(200);
    const other = theirs.licenseId;
    const probes: [string, string, unknown?][] = [
      ["GET", `/v1/portal/licenses/${other}`],
      ["GET", `/v1/portal/licenses/${theirs.second.licenseId}`],
      ["POST", `/v1/portal/licenses/${other}/machines/${theirs.machines[0]}/deactivate`],
      ["POST", `/v1/portal/licenses/${other}/machines/${encodeURIComponent(theirs.machines[1]!)}/deactivate`],
      ["GET", `/v1/portal/licenses/${other}/downloads`],
      ["GET", `/v1/portal/licenses/${other}/downloads?platform=win-x64`],
      ["PUT", `/v1/portal/licenses/${other}/licensee`, { name: "Hijacked" }],
    ];
    for (const [method, path, body] of probes) {
      const res = await as(s, method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.text).not.toContain(theirs.userKey);
      expect(res.text).not.toContain(theirs.machines[0]);
    }
    // Their machine id on my license: not my machine.
    const foreignMachine = await as(
      s,
      "POST",
      `/v1/portal/licenses/${mine.licenseId}/machines/${theirs.machines[0]}/deactivate`,
    );
    expect(foreignMachine.status).toBe(404);
    expect(foreignMachine.body["message"]).toBe(
      `Machine ${theirs.machines[0]} is not activated on license ${mine.licenseId}`,
    );
    // The lists hold only mine.
    const lists = [
      await as(s, "GET", "/v1/portal/licenses"),
      await as(s, "GET", "/v1/portal/orders"),
      await as(s, "GET", "/v1/portal/me"),
      await as(s, "GET", `/v1/portal/licenses/${mine.licenseId}`),
    ];
    for (const res of lists) {
      expect(res.status).toBe(200);
      for (const secret of [theirs.licenseId, theirs.userKey, theirs.orderNumber, theirs.email, theirs.machines[0]!])
        expect(res.text).not.toContain(secret);
    }
    expect(lists[1]!.body["orders"].map((o: { orderNumber: string }) => o.orderNumber)).toEqual([mine.orderNumber]);
    // Nothing of theirs changed: both machines still active, licensee as it was.
    const theirsNow = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`licenseId == "${other}"`)}`);
    expect(theirsNow.body["licenses"][0]).toMatchObject({ activeClientCount: 2 });
    expect(theirsNow.body["licenses"][0].licenseeName).toBe("Ann Original");
  });

  it("a license with no customer opens only itself: no other license, no orders", async () => {
    const w = await world(1);
    const alone = await newLicense({
      productId: (await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`licenseId == "${w.licenseId}"`)}`))
        .body["licenses"][0].productId,
      licensingMode: "Activation",
      maxClients: 2,
    });
    const other = await newLicense({
      productId: (await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`licenseId == "${w.licenseId}"`)}`))
        .body["licenses"][0].productId,
    });
    const s = await signIn(alone.userKey);
    expect(s.res.status, s.res.text).toBe(200);
    expect(s.res.body["customer"] ?? null).toBeNull();
    const list = await as(s, "GET", "/v1/portal/licenses");
    expect(list.body["licenses"].map((l: { licenseId: string }) => l.licenseId)).toEqual([alone.licenseId]);
    expect((await as(s, "GET", "/v1/portal/orders")).body["orders"]).toEqual([]);
    for (const id of [other.licenseId, w.licenseId])
      expect((await as(s, "GET", `/v1/portal/licenses/${id}`)).status).toBe(404);
  });

  it("refuses every portal route without a session, with a staff API key or console cookie, and writes without CSRF", async () => {
    const w = await world(1);
    const s = await signIn(w.userKey);
    const console = await call("POST", "/v1/auth/console/login", {
      body: { username: ADMIN.username, password: ADMIN.password },
    });
    const consoleCookie = /__Host-console-key=[^;]+/.exec(console.headers.get("set-cookie") ?? "")![0];
    const consoleCsrf = console.body["csrfToken"] as string;
    const routes: [string, string, unknown?][] = [
      ["GET", "/v1/portal/me"],
      ["POST", "/v1/portal/sign-out"],
      ["GET", "/v1/portal/licenses"],
      ["GET", `/v1/portal/licenses/${w.licenseId}`],
      ["POST", `/v1/portal/licenses/${w.licenseId}/machines/${w.machines[0]}/deactivate`],
      ["GET", `/v1/portal/licenses/${w.licenseId}/downloads`],
      ["GET", "/v1/portal/orders"],
      ["PUT", `/v1/portal/licenses/${w.licenseId}/licensee`, { name: "Nobody" }],
    ];
    const secret = s.cookie.split("=")[1]!;
    for (const [method, path, body] of routes) {
      const b = body !== undefined ? { body } : {};
      const tries = [
        await call(method, path, b),
        await call(method, path, { ...b, key: ADMIN.key }),
        await call(method, path, { ...b, headers: { cookie: consoleCookie, "x-csrf-token": consoleCsrf } }),
        await call(method, path, { ...b, headers: { authorization: `Bearer ${secret}` } }),
        // The portal cookie under the console's name.
        await call(method, path, { ...b, headers: { cookie: `__Host-console-key=${secret}`, "x-csrf-token": s.csrf } }),
      ];
      if (method !== "GET") tries.push(await call(method, path, { ...b, headers: { cookie: s.cookie } }));
      for (const res of tries) expect(res.status, `${method} ${path}`).toBe(401);
    }
    // The portal session is no API key: the management API refuses it, in the header or as the console's cookie.
    expect((await call("GET", "/v1/licenses", { key: secret })).status).toBe(401);
    expect(
      (
        await call("GET", "/v1/licenses", {
          headers: { cookie: `__Host-console-key=${secret}`, "x-csrf-token": s.csrf },
        })
      ).status,
    ).toBe(401);
    // Nothing changed: the machine is still active, the licensee as it was.
    const detail = await as(s, "GET", `/v1/portal/licenses/${w.licenseId}`);
    expect(detail.body["license"]).toMatchObject({ activeClientCount: 1, licenseeName: "Ann Original" });
  });
});

describe("customer portal actions", () => {
  it("counts deactivations exactly under concurrency and answers 429 with the reset date past the month's limit", async () => {
    const w = await world(6);
    const s = await signIn(w.userKey);
    const hook = await subscribe({ eventTypes: ["license.deactivated"] });
    const answers = await Promise.all(
      w.machines.map((m) => as(s, "POST", `/v1/portal/licenses/${w.licenseId}/machines/${m}/deactivate`)),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
    const over = answers.find((a) => a.status === 429)!;
    const now = new Date();
    const reset = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    expect(over.headers.get("x-deactivations-reset")).toBe(reset);
    expect(over.body["message"]).toContain(reset.slice(0, 10));
    expect(over.body["message"]).toMatch(/used its 3 machine deactivations this month/);
    const detail = await as(s, "GET", `/v1/portal/licenses/${w.licenseId}`);
    expect(detail.body["license"]["machines"]).toHaveLength(3);
    expect(detail.body["license"]["deactivations"]).toMatchObject({ used: 3, limit: 3, resetsAt: reset });
    // The events name the customer as the actor.
    const events = (await emitted(hook.id, "license.deactivated", 3)) as unknown as { actor?: unknown }[];
    for (const e of events) expect(e.actor).toEqual({ kind: "customer", customerId: w.customerId });
    const audit = await env.DB.prepare("SELECT properties FROM logs WHERE message LIKE ? AND category = 'Audit'")
      .bind(`%of ${w.licenseId} deactivated in the customer portal`)
      .all<{ properties: string }>();
    expect(audit.results).toHaveLength(3);
    expect(JSON.parse(audit.results[0]!.properties)).toMatchObject({
      actor: { kind: "customer", customerId: w.customerId },
    });
    // Next month, the count starts again.
    clock.move(Date.parse(reset) - Date.now() + 60_000);
    const left = detail.body["license"]["machines"][0].machineId as string;
    // The session of last month has ended (Application:ConsoleSessionLifetime): a new one.
    const later = await signIn(w.userKey);
    const next = await as(later, "POST", `/v1/portal/licenses/${w.licenseId}/machines/${left}/deactivate`);
    expect(next.status, next.text).toBe(200);
    expect(next.body["deactivations"]).toMatchObject({ used: 1 });
  });

  it("a machine not the license's: 404 with a clear message, nothing counted", async () => {
    const w = await world(1);
    const s = await signIn(w.userKey);
    const res = await as(s, "POST", `/v1/portal/licenses/${w.licenseId}/machines/no-such-machine/deactivate`);
    expect(res.status).toBe(404);
    expect(res.body["message"]).toBe(`Machine no-such-machine is not activated on license ${w.licenseId}`);
    const detail = await as(s, "GET", `/v1/portal/licenses/${w.licenseId}`);
    expect(detail.body["license"]).toMatchObject({ activeClientCount: 1, deactivations: { used: 0 } });
  });

  it("offers the newest build of each entitled platform through the download gate, and refuses one not entitled", async () => {
    const w = await world(0);
    const s = await signIn(w.userKey);
    const list = await as(s, "GET", `/v1/portal/licenses/${w.licenseId}/downloads`);
    expect(list.status, list.text).toBe(200);
    const win = list.body["downloads"].find((d: { platform: string }) => d.platform === "win-x64");
    expect(win, list.text).toBeDefined();
    expect(win).toMatchObject({ platform: "win-x64", version: "1.0.0" });
    expect(win.download.url).toMatch(/\?token=/);
    const linux = list.body["downloads"].find((d: { platform: string }) => d.platform === "linux-x64");
    expect(linux.download).toBeUndefined();
    expect(linux.unavailable).toMatch(/edition is not entitled/);
    // The tokenised URL downloads the build through the download route: the very bytes, once.
    const fetched = await exports.default.fetch(win.download.url);
    expect(fetched.status).toBe(200);
    const bytes = new Uint8Array(await fetched.arrayBuffer());
    expect((await hashesOf(bytes)).sha256).toBe((await hashesOf(bytesOf(2048, 7))).sha256);
    expect(win.download.sha256).toBe((await hashesOf(bytes)).sha256);
    expect((await exports.default.fetch(win.download.url)).status).toBe(403);

    const refused = await as(s, "GET", `/v1/portal/licenses/${w.licenseId}/downloads?platform=linux-x64`);
    expect(refused.status).toBe(403);
    expect(refused.body["message"]).toBe(
      `License ${w.licenseId} is not entitled to linux-x64 builds: the license's edition is not entitled to the platform`,
    );
    const unknown = await as(s, "GET", `/v1/portal/licenses/${w.licenseId}/downloads?platform=amiga`);
    expect(unknown.status).toBe(400);
    expect(unknown.body["message"]).toMatch(/Unknown platform amiga/);
  });

  it("changes the licensee name through the license write service (integrity kept, event and audit by the customer)", async () => {
    const w = await world(1);
    const s = await signIn(w.userKey);
    const hook = await subscribe({ eventTypes: ["license.updated"] });
    const blank = await as(s, "PUT", `/v1/portal/licenses/${w.licenseId}/licensee`, { name: "  " });
    expect(blank.status).toBe(400);
    expect(blank.body["message"]).toMatch(/licensee name must be 1 to 256 characters/);
    const res = await as(s, "PUT", `/v1/portal/licenses/${w.licenseId}/licensee`, { name: "Ann Renamed" });
    expect(res.status, res.text).toBe(200);
    expect(res.body["license"]).toMatchObject({ licenseeName: "Ann Renamed" });
    const [event] = (await emitted(hook.id, "license.updated")) as unknown as {
      actor?: unknown;
      previous: Record<string, unknown>;
    }[];
    expect(event!.actor).toEqual({ kind: "customer", customerId: w.customerId });
    expect(event!.previous).toMatchObject({ licenseeName: "Ann Original" });
    // The HMAC was renewed: the license still validates (a tampered one would not).
    const valid = await call("POST", "/v1/license/validate", {
      body: { userKey: w.userKey, machineId: w.machines[0] },
      key: ADMIN.key,
    });
    expect(valid.status, valid.text).toBe(200);
  });

  it("answers 404 everywhere when Portal:Enabled is off, and the branding anonymously", async () => {
    await setSetting("Portal:AccentColor", "#112233");
    const branding = await call("GET", "/v1/portal/branding");
    expect(branding.body).toMatchObject({ title: "Customer portal", accentColor: "#112233" });
    expect(
      (await admin("PUT", "/v1/settings", { settings: [{ name: "Portal:AccentColor", value: "blue" }] })).status,
    ).toBe(400);
    await setSetting("Portal:AccentColor", null);
    await setSetting("Portal:Enabled", "false");
    try {
      expect((await call("GET", "/v1/portal/branding")).status).toBe(404);
      expect((await call("POST", "/v1/portal/sign-in", { body: { email: "a@example.com" } })).status).toBe(404);
    } finally {
      await setSetting("Portal:Enabled", null);
    }
  });
});
