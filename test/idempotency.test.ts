/**
 * `Idempotency-Key` on management POSTs (CONTRACT 10, http/idempotency.ts), through the API: a repeat with the same
 * key and body answers the first answer again and creates nothing; another body answers 422; another credential's
 * same key is its own; a key is free again after 24 hours (and housekeeping removes it); a repeat while the first
 * request still runs answers 409; a refused first request keeps nothing.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { housekeeping } from "../src/app/housekeeping";
import { bytesOf, newRelease } from "./artifacts-kit";
import { ADMIN, BASE, call, countRows, keyFor, movableClock } from "./helpers";

const clockAhead = (await movableClock()).move;
const DAY = 24 * 60 * 60 * 1000;

const postCustomer = (idempotencyKey: string, customer: Record<string, unknown>, key = ADMIN.key) =>
  call("POST", "/v1/customers", { key, body: { customer }, headers: { "Idempotency-Key": idempotencyKey } });

const customersNamed = async (lastName: string) =>
  (
    await env.DB.prepare("SELECT count(*) AS n FROM customers WHERE last_name = ?")
      .bind(lastName)
      .first<{ n: number }>()
  )?.n;

describe("Idempotency-Key on management POSTs", () => {
  it("answers a repeat with the first answer and creates one record; another body answers 422", async () => {
    const key = crypto.randomUUID();
    const first = await postCustomer(key, { lastName: "Once", email: "once@example.com" });
    expect(first.status, first.text).toBe(200);
    expect(first.headers.get("Idempotent-Replayed")).toBeNull();

    const again = await postCustomer(key, { lastName: "Once", email: "once@example.com" });
    expect(again.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(again.headers.get("content-type")).toBe(first.headers.get("content-type"));
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await customersNamed("Once")).toBe(1);

    const before = await countRows("customers");
    const other = await postCustomer(key, { lastName: "Once", email: "twice@example.com" });
    expect(other.status).toBe(422);
    expect(other.body["message"]).toBe(
      `Idempotency-Key ${key} was already used for another request (another body, method or path); send a new key with a new request`,
    );
    // The same key on another route is another request too.
    const elsewhere = await call("POST", "/v1/products", {
      key: ADMIN.key,
      body: { product: { name: "Once" } },
      headers: { "Idempotency-Key": key },
    });
    expect(elsewhere.status).toBe(422);
    expect(await countRows("customers")).toBe(before);

    // Without the header every POST creates (the layer changes nothing else).
    expect(
      (await call("POST", "/v1/customers", { key: ADMIN.key, body: { customer: { lastName: "Once" } } })).status,
    ).toBe(200);
    expect(await customersNamed("Once")).toBe(2);

    const bad = await postCustomer("x".repeat(256), { lastName: "Bad key" });
    expect(bad.status).toBe(400);
    expect(bad.body["message"]).toBe("Idempotency-Key must be 1 to 255 visible ASCII characters");
    expect(await customersNamed("Bad key")).toBe(0);
  });

  it("is scoped to the credential: another caller's same key runs as its own request", async () => {
    const other = await keyFor(["Administrator"]);
    const key = crypto.randomUUID();
    const mine = await postCustomer(key, { lastName: "Scoped" });
    const theirs = await postCustomer(key, { lastName: "Scoped" }, other);
    expect(mine.status).toBe(200);
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("Idempotent-Replayed")).toBeNull();
    expect(theirs.body["customerId"]).not.toBe(mine.body["customerId"]);
    expect(await customersNamed("Scoped")).toBe(2);
    // And each caller's repeat answers its own first answer.
    expect((await postCustomer(key, { lastName: "Scoped" }, other)).body["customerId"]).toBe(theirs.body["customerId"]);
    expect((await postCustomer(key, { lastName: "Scoped" })).body["customerId"]).toBe(mine.body["customerId"]);
    expect(await customersNamed("Scoped")).toBe(2);
  });

  it("keeps a key 24 hours: then it is free, and housekeeping removes it", async () => {
    const key = crypto.randomUUID();
    const first = await postCustomer(key, { lastName: "Daily" });
    clockAhead(DAY - 60_000);
    expect((await postCustomer(key, { lastName: "Daily" })).body["customerId"]).toBe(first.body["customerId"]);
    expect(await customersNamed("Daily")).toBe(1);

    clockAhead(2 * 60_000);
    const later = await postCustomer(key, { lastName: "Daily" });
    expect(later.status).toBe(200);
    expect(later.headers.get("Idempotent-Replayed")).toBeNull();
    expect(later.body["customerId"]).not.toBe(first.body["customerId"]);
    expect(await customersNamed("Daily")).toBe(2);

    const kept = () =>
      env.DB.prepare("SELECT count(*) AS n FROM idempotency_keys WHERE key = ?").bind(key).first<{ n: number }>();
    expect((await kept())?.n).toBe(1);
    const counts = await housekeeping(env, new Date(Date.now() + 3 * DAY));
    expect(counts["idempotencyKeys"]).toBeGreaterThanOrEqual(1);
    expect((await kept())?.n).toBe(0);
  });

  it("answers 409 to a repeat while the first request still runs, then the first answer", async () => {
    const key = crypto.randomUUID();
    const body = new TextEncoder().encode(JSON.stringify({ customer: { lastName: "Concurrent" } }));
    // The first request's body arrives slowly: the route is still reading it when the repeat comes.
    let finish!: () => void;
    const slow = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(body.subarray(0, 5));
        await new Promise<void>((resolve) => {
          finish = resolve;
        });
        controller.enqueue(body.subarray(5));
        controller.close();
      },
    });
    const headers = {
      "x-api-key": ADMIN.key,
      "content-type": "application/json",
      "content-length": String(body.length),
      "Idempotency-Key": key,
    };
    const first = exports.default.fetch(`${BASE}/v1/customers`, { method: "POST", headers, body: slow });
    // Wait until the first request holds the key.
    for (let i = 0; i < 200; i++) {
      const row = await env.DB.prepare("SELECT status FROM idempotency_keys WHERE key = ?").bind(key).first();
      if (row) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    const during = await postCustomer(key, { lastName: "Concurrent" });
    expect(during.status).toBe(409);
    expect(during.headers.get("Retry-After")).toBe("1");
    expect(during.body["message"]).toBe(`A request with Idempotency-Key ${key} is still running; repeat it later`);
    finish();
    const done = await first;
    const firstBody = (await done.json()) as Record<string, unknown>;
    expect(done.status).toBe(200);
    const after = await postCustomer(key, { lastName: "Concurrent" });
    expect(after.headers.get("Idempotent-Replayed")).toBe("true");
    expect(after.body["customerId"]).toBe(firstBody["customerId"]);
    expect(await customersNamed("Concurrent")).toBe(1);

    // Two at once, with nothing held back: exactly one creates.
    const both = crypto.randomUUID();
    const answers = await Promise.all([
      postCustomer(both, { lastName: "Racing" }),
      postCustomer(both, { lastName: "Racing" }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual(
      answers.some((a) => a.status === 409) ? [200, 409] : [200, 200],
    );
    expect(await customersNamed("Racing")).toBe(1);
  });

  it("makes a streamed upload safe to repeat: a new form boundary is the same request, another file is not", async () => {
    const release = await newRelease();
    const file = bytesOf(200_000, 7);
    // A form encoded afresh (a new boundary, as every client draws), sent in small chunks that cut its boundaries.
    const sendForm = async (bytes: Uint8Array, key: string, chunk: number) => {
      const form = new FormData();
      form.set("platform", "win-x64");
      form.set("kind", "installer");
      form.set("file", new Blob([bytes]), "Setup.exe");
      const encoded = new Response(form);
      const body = new Uint8Array(await encoded.arrayBuffer());
      let at = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (at >= body.length) return controller.close();
          controller.enqueue(body.slice(at, at + chunk));
          at += chunk;
        },
      });
      const res = await exports.default.fetch(`${BASE}${release.path}`, {
        method: "POST",
        headers: {
          "x-api-key": ADMIN.key,
          "content-type": encoded.headers.get("content-type")!,
          "content-length": String(body.length),
          "Idempotency-Key": key,
        },
        body: stream,
      });
      return { status: res.status, replayed: res.headers.get("Idempotent-Replayed"), text: await res.text() };
    };
    const key = crypto.randomUUID();
    const first = await sendForm(file, key, 4096);
    expect(first.status, first.text).toBe(201);
    const again = await sendForm(file, key, 13);
    expect(again).toEqual({ ...first, replayed: "true" });
    const other = await sendForm(bytesOf(200_000, 8), key, 4096);
    expect(other.status).toBe(422);
    const downloads = await call("GET", release.path, { key: ADMIN.key });
    expect(downloads.body["releaseDownloads"]).toHaveLength(1);
  });

  it("is declared in the OpenAPI document on the management POSTs only", async () => {
    const doc = (await call("GET", "/swagger/v1/swagger.json")).body as {
      paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>;
    };
    const declares = (path: string, method: string) =>
      (doc.paths[path]?.[method]?.parameters ?? []).some((p) => p.name === "Idempotency-Key" && p.in === "header");
    expect(declares("/v1/customers", "post")).toBe(true);
    expect(declares("/v1/orders/{orderId}/products/{productId}", "post")).toBe(true);
    expect(declares("/v1/customers", "put")).toBe(false);
    expect(declares("/v1/auth/login", "post")).toBe(false);
    expect(doc.paths["/v1/license/validate"]?.["post"]).toBeDefined();
    expect(declares("/v1/license/validate", "post")).toBe(false);
  });

  it("keeps nothing of a refused request: the corrected request may use the key", async () => {
    const key = crypto.randomUUID();
    const refused = await postCustomer(key, { city: "Nowhere" });
    expect(refused.status).toBe(400);
    const corrected = await postCustomer(key, { lastName: "Corrected" });
    expect(corrected.status, corrected.text).toBe(200);
    expect(corrected.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await customersNamed("Corrected")).toBe(1);
  });
});
