/**
 * The development mail page's API (issue 37, "mail and first steps"): `GET /v1/email/outbox` lists every message the
 * service made with the list conventions (filter, sort, paging), `POST /v1/email/outbox/{emailId}/resend` sends one
 * again, both for Administrators only (a queued message holds its secrets: the user key, a sign-in link), and
 * `POST /v1/email/preview` renders a template for a chosen or a sample license without sending anything.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import worker from "../src/index";
import { SAMPLE_LICENSE } from "../src/mail/license-mail";
import { ADMIN, BASE, admin, call, countRows, keyFor, setSetting } from "./helpers";
import type { JsonBody } from "./json-body.ts";

/** A POST through the Worker with `EMAIL` bound to `transport` (the test Worker has no EMAIL binding of its own). */
async function postWith(transport: SendEmail | undefined, path: string, body?: unknown) {
  const ctx = createExecutionContext();
  const request = new Request(`${BASE}${path}`, {
    method: "POST",
    headers: { "x-api-key": ADMIN.key, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  }) as Request<unknown, IncomingRequestCfProperties>;
  const res = await worker.fetch(request, { ...env, EMAIL: transport }, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, body: (await res.json()) as JsonBody };
}

const outbox = async (query = "") => {
  const res = await admin("GET", `/v1/email/outbox${query}`);
  expect(res.status, res.text).toBe(200);
  return res.body;
};
const byId = async (id: number) =>
  (await outbox(`?filter=${encodeURIComponent(`id == ${id}`)}`))["emails"][0] as JsonBody;

let licenseId = "";
let userKey = "";
let templateId = 0;

beforeAll(async () => {
  await setSetting("Email:From", "licensing@example.com");
  const product = await admin("POST", "/v1/products", {
    product: { code: "studio", name: "Studio", url: "https://example.com/studio" },
  });
  const template = await admin("POST", "/v1/resources", {
    resource: {
      name: "Your {ProductName} license",
      type: "EmailTemplate",
      dataFormat: "html",
      data: '<p>Dear {CustomerName},</p><p>Key: {UserKey} ({LicenseId})</p><a href="{ProductDownload}">Download</a>',
    },
  });
  templateId = template.body["resourceId"];
  const created = await admin("POST", "/v1/licenses", {
    license: { productId: product.body["productId"], licenseeName: "Ada & Co", licenseeEmail: "ada@example.org" },
  });
  licenseId = created.body["licenseId"];
  const listed = await admin("GET", `/v1/licenses?filter=${encodeURIComponent(`licenseId == "${licenseId}"`)}`);
  userKey = listed.body["licenses"][0].userKey;
});
afterAll(() => setSetting("Email:From", null));

describe("GET /v1/email/outbox", () => {
  it("lists every message with its recipient, subject, status, time and whole body; filters and pages", async () => {
    const sent = await admin("POST", "/v1/email/license", { licenseId });
    expect(sent.body).toMatchObject({ status: "queued" });
    await admin("POST", "/v1/email/send", { to: "bob@example.com", subject: "Hello Bob", body: "plain text" });
    await admin("POST", "/v1/email/send", { to: "bob@example.com", subject: "Hello again", body: "more" });

    const all = await outbox("?sort=-id");
    expect(all["totalEmailsCount"]).toBe(3);
    expect(all["emails"].map((e: JsonBody) => e["subject"])).toEqual([
      "Hello again",
      "Hello Bob",
      "Your Studio license",
    ]);
    const license = await byId(sent.body["emailId"]);
    expect(license).toEqual({
      id: sent.body["emailId"],
      to: "ada@example.org",
      subject: "Your Studio license",
      body: `<p>Dear Ada &amp; Co,</p><p>Key: ${userKey} (${licenseId})</p><a href="https://example.com/studio">Download</a>`,
      isHtml: true,
      status: "queued",
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const filtered = await outbox(`?filter=${encodeURIComponent('to == "bob@example.com" && status == "queued"')}`);
    expect(filtered["totalEmailsCount"]).toBe(2);
    const page = await outbox("?sort=id&skip=1&take=1&select=subject");
    expect(page).toMatchObject({ emails: [{ subject: "Hello Bob" }], totalEmailsCount: 3 });
  });

  it("is the Administrator's alone: a LicenseManager and Sales are refused the list and the resend", async () => {
    const { body } = await admin("POST", "/v1/email/send", { to: "x@example.com", subject: "Secret", body: "k" });
    for (const role of ["LicenseManager", "Sales"]) {
      const key = await keyFor([role]);
      expect((await call("GET", "/v1/email/outbox", { key })).status, role).toBe(403);
      expect((await call("POST", `/v1/email/outbox/${body["emailId"]}/resend`, { key })).status, role).toBe(403);
    }
  });
});

describe("POST /v1/email/outbox/{emailId}/resend", () => {
  it("queues a kept message again as a new message, the same text", async () => {
    const first = await admin("POST", "/v1/email/license", { licenseId });
    const again = await admin("POST", `/v1/email/outbox/${first.body["emailId"]}/resend`);
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ status: "queued", emailId: expect.any(Number) });
    expect(again.body["emailId"]).not.toBe(first.body["emailId"]);
    const [a, b] = [await byId(first.body["emailId"]), await byId(again.body["emailId"])];
    expect({ ...b, id: 0, createdAt: "" }).toEqual({ ...a, id: 0, createdAt: "" });
  });

  it("sends through the EMAIL binding, keeping no body of a queued message; refuses a sent one whose secrets went", async () => {
    const queued = await admin("POST", "/v1/email/license", { licenseId });
    const resent = await postWith(env.TEST_EMAIL, `/v1/email/outbox/${queued.body["emailId"]}/resend`);
    expect(resent.status, JSON.stringify(resent.body)).toBe(200);
    expect(resent.body).toMatchObject({ status: "sent", messageId: expect.any(String) });
    const record = await byId(resent.body["emailId"]);
    expect(record).toMatchObject({ status: "sent", to: "ada@example.org", body: "[not kept]" });
    // The license email sent through the binding keeps its text but the key: it cannot be sent again as it was.
    const sent = await postWith(env.TEST_EMAIL, "/v1/email/license", { licenseId });
    expect((await byId(sent.body["emailId"]))["body"]).toContain("[not kept]");
    const before = await countRows("email_outbox");
    const refused = await admin("POST", `/v1/email/outbox/${sent.body["emailId"]}/resend`);
    expect(refused.status).toBe(400);
    expect(refused.body["message"]).toMatch(/secrets were not kept.*POST \/v1\/email\/license/);
    expect(await countRows("email_outbox")).toBe(before);
    expect((await admin("POST", "/v1/email/outbox/999999/resend")).body).toMatchObject({
      code: 400,
      message: "Email 999999 not found",
    });
  });
});

describe("POST /v1/email/preview", () => {
  it("renders a chosen license's email as sending would, and sends nothing", async () => {
    const before = await countRows("email_outbox");
    const res = await admin("POST", "/v1/email/preview", { licenseId });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      success: true,
      code: 0,
      to: "ada@example.org",
      subject: "Your Studio license",
      body: `<p>Dear Ada &amp; Co,</p><p>Key: ${userKey} (${licenseId})</p><a href="https://example.com/studio">Download</a>`,
      isHtml: true,
      templateId,
      templateName: "Your {ProductName} license",
      licenseId,
    });
    expect(await countRows("email_outbox")).toBe(before);
  });

  it("renders a sample license when none is chosen, and a chosen template", async () => {
    const plain = await admin("POST", "/v1/resources", {
      resource: { name: "Plain {LicenseId}", type: "EmailTemplate", data: "Hi {CustomerName}: {UserKey} {Unknown}" },
    });
    const sample = await admin("POST", "/v1/email/preview");
    expect(sample.status, sample.text).toBe(200);
    expect(sample.body).toMatchObject({ to: SAMPLE_LICENSE.to, subject: "Your Sample product license", templateId });
    expect(sample.body).not.toHaveProperty("licenseId");
    const chosen = await admin("POST", "/v1/email/preview", { templateId: plain.body["resourceId"] });
    expect(chosen.body).toMatchObject({
      subject: `Plain ${SAMPLE_LICENSE.values.LicenseId}`,
      body: `Hi Ada Lovelace: ${SAMPLE_LICENSE.values.UserKey} {Unknown}`,
      isHtml: false,
    });
  });

  it("answers 400 for an unknown license or template; any management role may preview", async () => {
    expect((await admin("POST", "/v1/email/preview", { licenseId: "licNOPE" })).body).toMatchObject({
      code: 400,
      message: "License licNOPE not found",
    });
    expect((await admin("POST", "/v1/email/preview", { templateId: 999999 })).body).toMatchObject({
      code: 400,
      message: "EmailTemplate 999999 not found",
    });
    const sales = await call("POST", "/v1/email/preview", { key: await keyFor(["Sales"]), body: { licenseId } });
    expect(sales.status, sales.text).toBe(200);
  });
});
