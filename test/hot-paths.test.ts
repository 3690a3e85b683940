/**
 * The per-isolate caches and batched reads of the hot paths (docs/performance.md): the product memo of the update
 * routes (forgotten at once by the isolate that changes a release, stale for at most PRODUCT_MEMO_MS elsewhere),
 * the kept anonymous answers in front of the Cache API, the bearer-token logout check deferred into a licensing
 * call's first D1 batch (a logged-out token still gets 401 first), and validate's single round trip.
 */
import { env, exports } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { access } from "../src/auth/guard";
import { clock } from "../src/kernel/clock";
import { loadConfig } from "../src/db/settings-store";
import { getDb } from "../src/db/client";
import { renderError } from "../src/http/respond";
import { createRouter } from "../src/http/router";
import { ANSWER_MEMO_MS, forgetAnswers, keepAnswer, recallAnswer } from "../src/delivery/answer-memo";
import { PRODUCT_MEMO_MS, productByCodeMemo } from "../src/delivery/product-memo";
import { ADMIN, BASE, admin, call, login, movableClock, setSetting } from "./helpers";

const moveClock = (await movableClock()).move;
let codes = 0;
const uniqueCode = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${codes++}`;

async function newProduct(code: string, isApplication = false): Promise<number> {
  const res = await admin("POST", "/v1/products", { product: { code, name: code, isApplication } });
  if (res.status !== 200) throw new Error(`product: ${res.text}`);
  return res.body["productId"];
}

describe("the product memo of the update routes", () => {
  it("keeps a product for PRODUCT_MEMO_MS, and forgets it when this isolate bumps the release generation", async () => {
    // A clock that stands still unless moved, so the memo's age is exactly what the test says.
    const start = clock.now().getTime();
    const at = (ms: number) => {
      clock.now = () => new Date(start + ms);
    };
    at(0);
    const code = uniqueCode("memo");
    const id = await newProduct(code);
    const db = getDb(env.DB);
    const generation = (await productByCodeMemo(db, code))!.releaseGeneration;

    // Another isolate's change: this isolate is not told, and keeps the generation it read for a bounded time.
    await env.DB.prepare("UPDATE products SET release_generation = release_generation + 1 WHERE id = ?").bind(id).run();
    expect((await productByCodeMemo(db, code))!.releaseGeneration).toBe(generation);
    at(PRODUCT_MEMO_MS - 1);
    expect((await productByCodeMemo(db, code))!.releaseGeneration).toBe(generation);
    at(PRODUCT_MEMO_MS);
    expect((await productByCodeMemo(db, code))!.releaseGeneration).toBe(generation + 1);

    // This isolate's change (a write through the API) applies at once.
    expect((await admin("PUT", "/v1/products", { product: { id, name: "Changed" } })).status).toBe(200);
    expect((await productByCodeMemo(db, code))!.releaseGeneration).toBe(generation + 2);
  });

  it("does not keep an unknown code, and forgets products when one is changed through the API", async () => {
    const code = uniqueCode("later");
    const db = getDb(env.DB);
    expect(await productByCodeMemo(db, code)).toBeUndefined();
    const now = new Date().toISOString();
    await env.DB.prepare(
      "INSERT INTO products (code, name, is_application, created_at, updated_at) VALUES (?, 'Later', 1, ?, ?)",
    )
      .bind(code, now, now)
      .run();
    const found = await productByCodeMemo(db, code);
    expect(found?.code).toBe(code);

    expect((await admin("PUT", "/v1/products", { product: { id: found!.id, name: "Renamed" } })).status).toBe(200);
    expect((await productByCodeMemo(db, code))!.name).toBe("Renamed");
  });

  it("serves an anonymous feed from the previous generation for at most PRODUCT_MEMO_MS after another isolate's change", async () => {
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    try {
      const code = uniqueCode("feed");
      const productId = await newProduct(code, true);
      const release = await admin("POST", `/v1/products/${productId}/releases`, {
        productRelease: { version: "1.0.0", public: true, requiresMaintenance: false },
      });
      const releaseId = release.body["productReleaseId"];
      const form = new FormData();
      form.set("platform", "win-x64");
      form.set("kind", "installer");
      form.set("file", new Blob([new Uint8Array(64).fill(7)]), "App 1.0.0.exe");
      const uploaded = await exports.default.fetch(`${BASE}/v1/products/${productId}/releases/${releaseId}/downloads`, {
        method: "POST",
        headers: { "x-api-key": ADMIN.key },
        body: form,
      });
      expect(uploaded.status).toBe(201);
      const feed = async () =>
        parseYaml(await (await exports.default.fetch(`${BASE}/v1/updates/${code}/latest.yml`)).text())
          .version as string;
      expect(await feed()).toBe("1.0.0");

      // Another isolate renames the release and bumps the generation: this isolate answers from the generation it
      // remembers until the memo's time is up, then from the new one.
      await env.DB.prepare("UPDATE product_releases SET version = '1.0.1' WHERE id = ?").bind(releaseId).run();
      await env.DB.prepare("UPDATE products SET release_generation = release_generation + 1 WHERE id = ?")
        .bind(productId)
        .run();
      expect(await feed()).toBe("1.0.0");
      moveClock(PRODUCT_MEMO_MS);
      expect(await feed()).toBe("1.0.1");
    } finally {
      await setSetting("Updates:AllowPublicApplicationReleases", null);
    }
  });
});

describe("kept anonymous answers", () => {
  afterEach(() => forgetAnswers());
  const answer = (body: BodyInit, status = 200) =>
    new Response(body, {
      status,
      headers: { "Content-Type": "text/yaml; charset=utf-8", "Cache-Control": "public, max-age=60" },
    });

  it("hands back a fresh copy of the answer until ANSWER_MEMO_MS or its max-age, whichever comes first", async () => {
    const now = clock.now().getTime();
    await keepAnswer("k", answer("version: 1.0.0"), now, 60_000);
    const first = recallAnswer("k", now + 1);
    const second = recallAnswer("k", now + ANSWER_MEMO_MS - 1);
    expect(await first?.text()).toBe("version: 1.0.0");
    expect(await second?.text()).toBe("version: 1.0.0");
    expect(second?.headers.get("cache-control")).toBe("public, max-age=60");
    expect(recallAnswer("k", now + ANSWER_MEMO_MS)).toBeUndefined();

    await keepAnswer("short", answer("x"), now, 1_000);
    expect(recallAnswer("short", now + 999)).toBeDefined();
    expect(recallAnswer("short", now + 1_000)).toBeUndefined();
  });

  it("treats a clock that went back as expired, and keeps neither large answers nor uncacheable ones", async () => {
    const now = clock.now().getTime();
    await keepAnswer("k", answer("a"), now, 60_000);
    expect(recallAnswer("k", now - 1)).toBeUndefined();
    await keepAnswer("big", answer(new Uint8Array(256 * 1024 + 1)), now, 60_000);
    expect(recallAnswer("big", now)).toBeUndefined();
    await keepAnswer("zero", answer("a"), now, 0);
    expect(recallAnswer("zero", now)).toBeUndefined();
  });

  it("stays within its memory bound by dropping the oldest answers", async () => {
    const now = clock.now().getTime();
    const size = 200 * 1024;
    for (let i = 0; i < 30; i++) await keepAnswer(`k${i}`, answer(new Uint8Array(size).fill(i)), now, 60_000);
    expect(recallAnswer("k0", now)).toBeUndefined();
    const last = recallAnswer("k29", now);
    expect(new Uint8Array(await last!.arrayBuffer())[0]).toBe(29);
    const kept = Array.from({ length: 30 }, (_, i) => recallAnswer(`k${i}`, now)).filter(Boolean).length;
    expect(kept * size).toBeLessThanOrEqual(4 * 1024 * 1024);
  });
});

describe("a bearer token's logout check in the licensing calls' first batch", () => {
  async function signedIn(mode: "Activation" | "Floating") {
    const productId = await newProduct(uniqueCode("lic"));
    const created = await admin("POST", "/v1/licenses", { license: { productId, licensingMode: mode } });
    const listed = await admin(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`id == ${created.body["id"]}`)}&select=userKey`,
    );
    const userKey = listed.body["licenses"][0].userKey as string;
    const login = await call("POST", "/v1/auth/login", { body: { userKey } });
    expect(login.status).toBe(200);
    return { userKey, token: login.body["token"] as string, licenseId: created.body["licenseId"] as string };
  }

  it("answers a logged-out token 401 on every licensing call, before any other refusal", async () => {
    const activation = await signedIn("Activation");
    const floating = await signedIn("Floating");
    const op = (name: string, token: string, options: { body?: unknown; raw?: string }) =>
      call("POST", `/v1/license/${name}`, { token, ...options });
    const activated = await op("activate", activation.token, {
      body: { userKey: activation.userKey, machineId: "PC-1" },
    });
    expect(activated.status, `activate ${activated.text}`).toBe(200);
    const seat = await op("request", floating.token, {
      body: { userKey: floating.userKey, machineId: "PC-1", clientId: "app" },
    });
    expect(seat.status, `request ${seat.text}`).toBe(200);
    const validated = await op("validate", activation.token, {
      body: { userKey: activation.userKey, machineId: "PC-1" },
    });
    expect(validated.status, `validate ${validated.text}`).toBe(200);
    const beat = await op("heartbeat", floating.token, { body: { licenseToken: seat.body["licenseToken"] } });
    expect(beat.status, `heartbeat ${beat.text}`).toBe(200);

    for (const { token } of [activation, floating])
      expect((await call("POST", "/v1/auth/logout", { token, body: {} })).status).toBe(200);
    const refusal = await call("GET", "/v1/auth/session", { token: activation.token });
    expect(refusal.status).toBe(401);

    const calls: [string, string, { body?: unknown; raw?: string }][] = [
      ["validate", activation.token, { body: { userKey: activation.userKey, machineId: "PC-1" } }],
      ["activate", activation.token, { body: { userKey: activation.userKey, machineId: "PC-2" } }],
      ["deactivate", activation.token, { body: { userKey: activation.userKey, machineId: "PC-1" } }],
      ["request", floating.token, { body: { userKey: floating.userKey, machineId: "PC-2", clientId: "app" } }],
      ["heartbeat", floating.token, { body: { licenseToken: seat.body["licenseToken"] } }],
      ["release", floating.token, { body: { licenseToken: seat.body["licenseToken"] } }],
      // Refused before any read (a key that cannot be one, a missing token), by the schema, or as unreadable JSON.
      ["validate", activation.token, { body: { userKey: "" } }],
      ["heartbeat", floating.token, { body: {} }],
      ["validate", activation.token, { body: { userKey: activation.userKey, machineId: "x".repeat(300) } }],
      ["validate", activation.token, { raw: "{not json" }],
    ];
    for (const [name, token, options] of calls) {
      const res = await op(name, token, options);
      expect(res.status, `${name} ${JSON.stringify(options)}: ${res.text}`).toBe(401);
      expect(res.text).toBe(refusal.text);
    }
    // Nothing was changed by the refused calls: the machine is still activated, the seat still held.
    const held = await env.DB.prepare(
      "SELECT t.machine_id AS machine FROM license_tokens AS t JOIN licenses AS l ON l.id = t.license_id WHERE l.license_id IN (?, ?) ORDER BY t.id",
    )
      .bind(activation.licenseId, floating.licenseId)
      .all<{ machine: string }>();
    expect(held.results.map((r) => r.machine)).toEqual(["PC-1", "PC-1"]);
  });

  it("answers 401 from the guard when a route never ran the deferred check", async () => {
    // A route that takes the deferred guard but reads nothing: the guard settles the check after it.
    const app = createRouter();
    app.use("*", async (c, next) => {
      c.set("config", (await loadConfig(c.env, c.env.DB)).config);
      c.set("db", getDb(c.env.DB));
      await next();
    });
    const [guard] = access.either(undefined, { deferLogoutCheck: true }).middleware;
    app.get("/probe", guard!, (c) => c.text("done"));
    app.onError(renderError);
    const probe = (token: string) => app.request("/probe", { headers: { authorization: `Bearer ${token}` } }, env);

    const token = await login();
    expect((await probe(token)).status).toBe(200);
    expect((await call("POST", "/v1/auth/logout", { token, body: {} })).status).toBe(200);
    const refused = await probe(token);
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toBe("Bearer");
  });
});

describe("validate in one round trip", () => {
  it("finds the derived activation among a machine's tokens, and a given token by its digest", async () => {
    const productId = await newProduct(uniqueCode("val"));
    const created = await admin("POST", "/v1/licenses", { license: { productId, licensingMode: "Activation" } });
    const licenseId = created.body["licenseId"] as string;
    const userKey = (
      await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${created.body["id"]}`)}&select=userKey`)
    ).body["licenses"][0].userKey as string;
    const op = (name: string, body: Record<string, unknown>) =>
      call("POST", `/v1/license/${name}`, { key: ADMIN.key, body });

    const byHand = await admin("POST", `/v1/licenses/${licenseId}/tokens`, {
      licenseToken: { machineId: "PC-1", clientId: "app" },
    });
    expect(byHand.status, byHand.text).toBe(200);
    const handToken = byHand.body["token"] as string;
    // A hand-issued token of the machine is not its derived activation.
    expect((await op("validate", { userKey, machineId: "PC-1", clientId: "app" })).status).toBe(529);
    const activated = await op("activate", { userKey, machineId: "PC-1", clientId: "app" });
    const derived = activated.body["licenseToken"] as string;
    expect(derived).not.toBe(handToken);

    const byMachine = await op("validate", { userKey, machineId: "PC-1", clientId: "app" });
    expect(byMachine.body).toMatchObject({ status: "Activated", licenseToken: derived });
    expect((await op("validate", { userKey, machineId: "PC-1" })).body).toMatchObject({ code: 529 });
    expect((await op("validate", { userKey, licenseToken: handToken })).body).toMatchObject({
      status: "Activated",
      licenseToken: handToken,
    });
    expect((await op("validate", { userKey, licenseToken: ` ${derived} `, machineId: "PC-1" })).body).toMatchObject({
      status: "Activated",
      licenseToken: derived,
    });
    expect((await op("validate", { userKey, licenseToken: handToken, machineId: "PC-2" })).body).toMatchObject({
      code: 529,
    });
    expect((await op("validate", { userKey, licenseToken: "   " })).body).toMatchObject({ code: 529 });
    expect((await op("validate", { userKey })).body).toMatchObject({ status: "NotActivated" });

    // Another license's token is never found through this license's key.
    const other = await admin("POST", "/v1/licenses", { license: { productId, licensingMode: "Activation" } });
    const otherToken = (
      await admin("POST", `/v1/licenses/${other.body["licenseId"]}/tokens`, { licenseToken: { machineId: "PC-9" } })
    ).body["token"] as string;
    expect((await op("validate", { userKey, licenseToken: otherToken })).body).toMatchObject({ code: 529 });
  });
});
