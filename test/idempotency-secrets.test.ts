/**
 * The replay store of `Idempotency-Key` keeps no secret in clear (issue 36, N7): a management POST's answer that
 * hands out a secret once (a new API key and its client secret) is kept for its repeats sealed with
 * Application:EncryptionKey, and the repeat still answers it exactly.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, call, ADMIN } from "./helpers";

describe("the Idempotency-Key replay store", () => {
  it("keeps a new API key's answer sealed, and a repeat answers the same key and client secret", async () => {
    const user = await admin("POST", "/v1/users", {
      user: { userName: `idem-${crypto.randomUUID().slice(0, 8)}`, password: "Secret#123456", roles: ["Sales"] },
    });
    const idempotencyKey = crypto.randomUUID();
    const send = () =>
      call("POST", "/v1/api-keys", {
        key: ADMIN.key,
        headers: { "Idempotency-Key": idempotencyKey },
        body: { apiKey: { name: "sealed", ownerId: user.body["userId"], permissions: 1 } },
      });
    const first = await send();
    expect(first.status, first.text).toBe(200);
    const { key, clientSecret } = first.body as { key: string; clientSecret: string };
    expect(key).toMatch(/^api_/);
    const rows = await env.DB.prepare("SELECT body FROM idempotency_keys WHERE key = ?")
      .bind(idempotencyKey)
      .all<{ body: string }>();
    expect(rows.results).toHaveLength(1);
    const stored = rows.results[0]!.body;
    expect(stored).not.toContain(key);
    expect(stored).not.toContain(clientSecret);
    expect(stored.startsWith("v1:")).toBe(true);
    const again = await send();
    expect(again.status, again.text).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toMatchObject({ key, clientSecret });
  });
});
