/**
 * Secrets at rest and their comparison (DESIGN "Reliability and security": secrets are stored as digests;
 * comparisons are constant-time). Every secret the service hands out (API key and client secret, activation and
 * floating tokens, tokens issued by hand, download tokens, bearer tokens, passwords, a resource's password, webhook
 * subscriptions' extra header values) is looked for, in plain text,
 * in every D1 table and in the license's seat object: none may be there. The comparison helpers are checked on the
 * cases a naive version gets wrong. The review of every comparison in the source is test/node/secret-comparisons.test.ts.
 */
import { env, exports } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { timingSafeEqual, timingSafeEqualText } from "../../src/kernel/crypto";
import { hashPassword, verifyPassword } from "../../src/auth/passwords";
import { BASE, admin, call, login } from "../helpers";
import { bytesOf, newRelease, upload } from "../artifacts-kit";
import { newLicense } from "../samples/licensing";

async function everyRow(): Promise<string> {
  const tables = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
  ).all<{ name: string }>();
  const dumps: string[] = [];
  for (const { name } of tables.results)
    dumps.push(JSON.stringify((await env.DB.prepare(`SELECT * FROM "${name}"`).all()).results));
  return dumps.join("\n");
}

describe("secrets at rest", () => {
  it("no secret the service hands out is stored in plain text, in D1 or in a seat object", async () => {
    const secrets: string[] = [];
    const password = "Plain#Text-Password-42";
    const user = await admin("POST", "/v1/users", { user: { userName: "secretive", password, roles: ["Sales"] } });
    const key = await admin("POST", "/v1/api-keys", { apiKey: { name: "k", ownerId: user.body["userId"] } });
    secrets.push(password, key.body["key"], key.body["clientSecret"]);

    const act = await newLicense("Activation");
    secrets.push(
      (await admin("POST", "/v1/license/activate", { userKey: act.userKey, machineId: "PC" })).body["licenseToken"],
    );
    secrets.push(
      (await admin("POST", `/v1/licenses/${act.licenseId}/tokens`, { licenseToken: { machineId: "OFFLINE" } })).body[
        "token"
      ],
    );
    const floating = await newLicense("Floating", 2);
    const seat = (
      await admin("POST", "/v1/license/request", { userKey: floating.userKey, machineId: "m", clientId: "c" })
    ).body["licenseToken"] as string;
    secrets.push(seat);

    // Secrets an operator hands the service: a resource's password and a webhook receiver's credentials.
    const resourcePassword = "Resource#Password-0f9e8d7c";
    const resource = await admin("POST", "/v1/resources", {
      resource: { name: "protected", type: "File", password: resourcePassword },
    });
    expect(resource.status).toBe(200);
    const updatedPassword = "Resource#Password-changed-1a2b";
    expect(
      (
        await admin("PUT", "/v1/resources", {
          resource: { id: resource.body["resourceId"], password: updatedPassword },
        })
      ).status,
    ).toBe(200);
    const headerValue = "Bearer receiver-credential-5c4b3a29";
    const subscription = await admin("POST", "/v1/webhooks/subscriptions", {
      subscription: {
        name: "receiver",
        url: "https://hooks.example.com/in",
        eventTypes: ["webhook.test"],
        headers: { Authorization: headerValue },
      },
    });
    expect(subscription.status).toBe(201);
    const rotatedHeader = "Bearer receiver-credential-rotated-77";
    const subscriptionId = subscription.body["subscription"].id;
    const rotated = await admin("PUT", `/v1/webhooks/subscriptions/${subscriptionId}`, {
      subscription: { headers: { Authorization: rotatedHeader } },
    });
    secrets.push(resourcePassword, updatedPassword, headerValue, rotatedHeader);
    // Masked in every answer: the create and update answers, the record, the list; the password never appears.
    const answers = [
      subscription.text,
      rotated.text,
      (await admin("GET", `/v1/webhooks/subscriptions/${subscriptionId}`)).text,
      (await admin("GET", "/v1/webhooks/subscriptions")).text,
      (await admin("GET", "/v1/resources")).text,
      resource.text,
    ].join("\n");
    for (const secret of [resourcePassword, updatedPassword, headerValue, rotatedHeader])
      expect(answers.includes(secret), secret).toBe(false);
    expect(rotated.body["subscription"].headers).toEqual({ Authorization: "********" });

    const bearer = await login("secretive", password);
    secrets.push(bearer);
    expect((await call("POST", "/v1/auth/logout", { token: bearer, body: {} })).status).toBe(200);

    const r = await newRelease("1.0.0");
    await admin("PUT", `/v1/products/${r.productId}/releases`, {
      productRelease: { id: r.releaseId, public: true, releaseDate: "2026-01-01T00:00:00Z" },
    });
    await upload(r.path, bytesOf(100));
    const lic = await admin("POST", "/v1/licenses", { license: { productId: r.productId } });
    const userKey = (
      await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`id == ${lic.body["id"]}`)}&select=userKey`)
    ).body["licenses"][0].userKey;
    const check = await (
      await exports.default.fetch(`${BASE}/v1/updates/${r.code}?platform=win-x64&version=0.0.1`, {
        headers: { "X-Service-User-Key": userKey },
      })
    ).json<{ data: { download: { url: string } } }>();
    secrets.push(new URL(check.data.download.url).searchParams.get("token")!);

    expect(secrets.every((s) => typeof s === "string" && s.length >= 20)).toBe(true);
    const stored = await everyRow();
    for (const secret of secrets)
      expect(stored.includes(secret), `${secret.slice(0, 9)}… is stored in plain text`).toBe(false);

    const seats = env.LICENSE_SEATS.getByName(String(floating.id));
    const rows = await runInDurableObject(seats, (_instance, state) =>
      JSON.stringify(state.storage.sql.exec("SELECT * FROM seats").toArray()),
    );
    expect(rows).toContain(seat.slice(0, 9));
    expect(rows.includes(seat)).toBe(false);
  });
});

describe("secrets stored in plain text before encryption at rest", () => {
  it("are read as stored, then encrypted in place by the cron trigger; deliveries still send the header", async () => {
    const { decryptSecret } = await import("../../src/kernel/secrets");
    const { openHeaders } = await import("../../src/webhooks/subscriptions");
    const { buildConfig } = await import("../../src/kernel/config");
    const { createExecutionContext, createScheduledController, waitOnExecutionContext } = await import(
      "cloudflare:test"
    );
    const worker = (await import("../../src/index")).default;
    const subscription = await admin("POST", "/v1/webhooks/subscriptions", {
      subscription: { name: "legacy", url: "https://hooks.example.com/legacy", eventTypes: ["webhook.test"] },
    });
    const resource = await admin("POST", "/v1/resources", { resource: { name: "legacy", type: "File" } });
    const id = subscription.body["subscription"].id;
    // Rows as a version before encryption at rest wrote them.
    await env.DB.batch([
      env.DB.prepare("UPDATE webhook_subscriptions SET headers = ? WHERE id = ?").bind(
        JSON.stringify({ Authorization: "Bearer legacy-plain-credential" }),
        id,
      ),
      env.DB.prepare("UPDATE resources SET password = 'legacy-plain-password' WHERE id = ?").bind(
        resource.body["resourceId"],
      ),
    ]);
    const config = buildConfig({ Application__EncryptionKey: "test-encryption-key" }, []).config;
    const before = await env.DB.prepare("SELECT headers FROM webhook_subscriptions WHERE id = ?")
      .bind(id)
      .first<{ headers: string }>();
    expect(await openHeaders(config, JSON.parse(before!.headers))).toEqual({
      Authorization: "Bearer legacy-plain-credential",
    });
    expect((await admin("GET", `/v1/webhooks/subscriptions/${id}`)).body["subscription"].headers).toEqual({
      Authorization: "********",
    });

    const ctx = createExecutionContext();
    worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "*/15 * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    const stored = await everyRow();
    expect(stored.includes("legacy-plain-credential")).toBe(false);
    expect(stored.includes("legacy-plain-password")).toBe(false);
    const after = await env.DB.prepare("SELECT headers FROM webhook_subscriptions WHERE id = ?")
      .bind(id)
      .first<{ headers: string }>();
    expect(await openHeaders(config, JSON.parse(after!.headers))).toEqual({
      Authorization: "Bearer legacy-plain-credential",
    });
    const password = await env.DB.prepare("SELECT password FROM resources WHERE id = ?")
      .bind(resource.body["resourceId"])
      .first<{ password: string }>();
    expect(await decryptSecret("test-encryption-key", password!.password)).toBe("legacy-plain-password");
  });
});

describe("comparison helpers", () => {
  it("compare in constant time and answer false for different lengths and for prefixes", () => {
    const a = new Uint8Array([1, 2, 3, 4]);
    expect(timingSafeEqual(a, new Uint8Array([1, 2, 3, 4]))).toBe(true);
    expect(timingSafeEqual(a, new Uint8Array([1, 2, 3, 5]))).toBe(false);
    expect(timingSafeEqual(a, new Uint8Array([1, 2, 3]))).toBe(false);
    expect(timingSafeEqual(a, new Uint8Array([1, 2, 3, 4, 0]))).toBe(false);
    expect(timingSafeEqual(new Uint8Array(0), new Uint8Array(0))).toBe(true);
    expect(timingSafeEqualText("hmac", "hmac")).toBe(true);
    expect(timingSafeEqualText("hmac", "hma")).toBe(false);
    // Text is compared as UTF-8: visually equal but differently encoded text is not equal.
    expect(timingSafeEqualText("é", "e\u0301")).toBe(false);
  });

  it("verify passwords against PBKDF2 hashes, and a missing hash never matches (even the dummy's own password)", async () => {
    const stored = await hashPassword("right");
    expect(await verifyPassword("right", stored)).toBe(true);
    expect(await verifyPassword("wrong", stored)).toBe(false);
    expect(await verifyPassword("", null)).toBe(false);
    expect(await verifyPassword("right", undefined)).toBe(false);
    expect(await verifyPassword("right", "plain-text")).toBe(false);
    expect(await verifyPassword("right", stored.replace(/\$[^$]+$/, "$AAAA"))).toBe(false);
  });
});
