/**
 * A sent message's record keeps no secret it carried (issue 36): the license email goes out with the user key, and
 * the outbox row that records it has the key replaced; a queued message (no EMAIL binding: the row is the delivery)
 * keeps its text.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import worker from "../src/index";
import { ADMIN, BASE, admin, setSetting } from "./helpers";

async function postWith(transport: SendEmail | undefined, path: string, body: unknown) {
  const ctx = createExecutionContext();
  const request = new Request(`${BASE}${path}`, {
    method: "POST",
    headers: { "x-api-key": ADMIN.key, "content-type": "application/json" },
    body: JSON.stringify(body),
  }) as Request<unknown, IncomingRequestCfProperties>;
  const res = await worker.fetch(request, { ...env, EMAIL: transport }, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const outboxBody = async (id: unknown) =>
  (await env.DB.prepare("SELECT body FROM email_outbox WHERE id = ?").bind(id).first<{ body: string }>())!.body;

describe("the record of a sent license email", () => {
  let licenseId = "";
  let userKey = "";
  beforeAll(async () => {
    await setSetting("Email:From", "licensing@example.com");
    const product = await admin("POST", "/v1/products", {
      product: { code: `mail-${crypto.randomUUID().slice(0, 8)}`, name: "Mail" },
    });
    const template = await admin("POST", "/v1/resources", {
      resource: { name: "Your {ProductName} license", type: "EmailTemplate", data: "License {LicenseId}: {UserKey}" },
    });
    expect(template.status, template.text).toBe(200);
    const created = await admin("POST", "/v1/licenses", {
      license: { productId: product.body["productId"], licenseeEmail: "lee@example.com" },
    });
    licenseId = created.body["licenseId"];
    const listed = await admin(
      "GET",
      `/v1/licenses?filter=${encodeURIComponent(`id == ${created.body["id"]}`)}&select=userKey`,
    );
    userKey = listed.body["licenses"][0].userKey;
  });
  afterAll(() => setSetting("Email:From", null));

  it("sends the user key and keeps the record without it; a queued one keeps it to be delivered", async () => {
    const res = await postWith(env.TEST_EMAIL, "/v1/email/license", { licenseId });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body["status"]).toBe("sent");
    const kept = await outboxBody(res.body["emailId"]);
    expect(kept).toContain(licenseId);
    expect(kept).not.toContain(userKey);
    expect(kept).toContain("[not kept]");
    const queued = await postWith(undefined, "/v1/email/license", { licenseId });
    expect(queued.body["status"]).toBe("queued");
    expect(await outboxBody(queued.body["emailId"])).toContain(userKey);
  });
});
