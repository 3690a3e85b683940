/**
 * `/v1/email/send` and `/v1/email/license` (CONTRACT section 3): the outbox when no EMAIL binding is bound, a real
 * local send_email binding (which parses the raw MIME and checks its From) when one is, the license email rendered
 * from the EmailTemplate resource, SPEC's 400s with nothing written; and the MIME builder itself.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import worker from "../src/index";
import { buildMime, encodeSubject, htmlToText } from "../src/mail/mime";
import { ADMIN, BASE, admin, countRows, setSetting } from "./helpers";
import { created } from "./samples/kit";
import { newLicenseRow } from "./samples/operations";
import type { JsonBody } from "./json-body.ts";

interface OutboxRow {
  id: number;
  to_address: string;
  subject: string;
  body: string;
  is_html: number;
  status: string;
  sent_at: string | null;
}
const outboxRow = (id: number) => env.DB.prepare("SELECT * FROM email_outbox WHERE id = ?").bind(id).first<OutboxRow>();
const unique = () => crypto.randomUUID().slice(0, 8);

/** A POST through the Worker with `EMAIL` bound to `transport` (the test Worker has no EMAIL binding of its own). */
async function postWith(
  transport: SendEmail | undefined,
  path: string,
  body: unknown,
): Promise<{ status: number; body: JsonBody }> {
  const ctx = createExecutionContext();
  const init = {
    method: "POST",
    headers: { "x-api-key": ADMIN.key, "content-type": "application/json" },
    body: JSON.stringify(body),
  };
  // An incoming request as the runtime hands it over (its cf properties are not needed here).
  const request = new Request(`${BASE}${path}`, init) as Request<unknown, IncomingRequestCfProperties>;
  const res = await worker.fetch(request, { ...env, EMAIL: transport }, ctx);
  await waitOnExecutionContext(ctx);
  return { status: res.status, body: (await res.json()) as JsonBody };
}

/** Decodes a Subject header value of RFC 2047 B-encoded words back to text. */
function decodeSubject(value: string): string {
  const words = [...value.matchAll(/=\?UTF-8\?B\?([^?]*)\?=/g)].map((m) =>
    Uint8Array.from(atob(m[1]!), (ch) => ch.charCodeAt(0)),
  );
  return words.map((bytes) => new TextDecoder().decode(bytes)).join("");
}
const decodeBase64Text = (lines: string) =>
  new TextDecoder().decode(Uint8Array.from(atob(lines.replace(/\r\n/g, "")), (ch) => ch.charCodeAt(0)));

describe("POST /v1/email/send without an EMAIL binding: the outbox", () => {
  it("queues the message and answers its outbox id", async () => {
    const res = await admin("POST", "/v1/email/send", {
      to: "eve@example.com",
      subject: "Welcome",
      body: "<p>Hi</p>",
      isHtml: true,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ success: true, code: 0, status: "queued", emailId: expect.any(Number) });
    const row = await outboxRow(res.body["emailId"]);
    expect(row).toMatchObject({
      to_address: "eve@example.com",
      subject: "Welcome",
      body: "<p>Hi</p>",
      is_html: 1,
      status: "queued",
      sent_at: null,
    });
    const plain = await admin("POST", "/v1/email/send", { to: "eve@example.com", subject: "Plain", body: "" });
    expect((await outboxRow(plain.body["emailId"]))!.is_html).toBe(0);
  });

  it("refuses invalid addresses, multi-line subjects and missing fields with problem details, and writes nothing", async () => {
    const before = await countRows("email_outbox");
    for (const body of [
      { to: "not-an-address", subject: "S", body: "B" },
      { to: "a@example.com\r\nBcc: evil@example.com", subject: "S", body: "B" },
      { to: "a@example.com", subject: "Hi\r\nBcc: evil@example.com", body: "B" },
      { to: "a@example.com", subject: "", body: "B" },
      { to: "a@example.com", subject: "S" },
      { to: "a@example.com", subject: "S", body: "B", isHtml: "yes" },
    ]) {
      const res = await admin("POST", "/v1/email/send", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
    }
    expect(await countRows("email_outbox")).toBe(before);
  });
});

describe("with an EMAIL binding", () => {
  const sender = "licensing@example.com";
  beforeAll(() => setSetting("Email:From", sender));
  afterAll(() => setSetting("Email:From", null));

  it("sends through a real local send_email binding, which accepts the raw message, and records it as sent", async () => {
    const envelopes: { from: string; to: string }[] = [];
    const recording: SendEmail = {
      send: (message: EmailMessage | EmailMessageBuilder) => {
        envelopes.push({ from: message.from as string, to: message.to as string });
        return env.TEST_EMAIL!.send(message as EmailMessage);
      },
    };
    for (const mail of [
      { to: "bob@example.org", subject: "Plain text", body: "Hello Bob" },
      {
        to: "bob@example.org",
        subject: "Ihre Lizenz für Ünïcode ✓ — a subject long enough to need several encoded words",
        body: "<p>Grüße</p>",
        isHtml: true,
      },
    ]) {
      const res = await postWith(recording, "/v1/email/send", mail);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({
        success: true,
        code: 0,
        status: "sent",
        emailId: expect.any(Number),
        messageId: expect.stringContaining("@example.com"),
      });
      const row = await outboxRow(res.body["emailId"]);
      expect(row).toMatchObject({ to_address: "bob@example.org", subject: mail.subject, status: "sent" });
      expect(row!.sent_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    }
    expect(envelopes).toEqual([
      { from: sender, to: "bob@example.org" },
      { from: sender, to: "bob@example.org" },
    ]);
  });

  it("answers 500 with the transport's reason when the binding refuses, and records nothing", async () => {
    const refusing: SendEmail = {
      send: () => Promise.reject(new Error("destination address is not a verified address")),
    };
    const before = await countRows("email_outbox");
    const res = await postWith(refusing, "/v1/email/send", { to: "stranger@example.net", subject: "S", body: "B" });
    expect(res).toEqual({
      status: 500,
      body: {
        success: false,
        code: 500,
        message: "The email to stranger@example.net could not be sent: destination address is not a verified address",
      },
    });
    expect(await countRows("email_outbox")).toBe(before);
  });

  it("needs Email:From to send, and says so", async () => {
    await setSetting("Email:From", null);
    try {
      const res = await postWith(env.TEST_EMAIL, "/v1/email/send", { to: "bob@example.org", subject: "S", body: "B" });
      expect(res.status).toBe(500);
      expect(res.body["message"]).toContain("Email:From");
    } finally {
      await setSetting("Email:From", sender);
    }
  });
});

describe("POST /v1/email/license", () => {
  let productId = 0;
  let customerId = 0;
  const productCode = `ED${unique()}`;
  const send = (body: unknown) => admin("POST", "/v1/email/license", body);

  beforeAll(async () => {
    productId = await created(
      "/v1/products",
      { product: { code: productCode, name: "Ultra Editor", url: "https://example.com/download" } },
      "productId",
    );
    customerId = await created(
      "/v1/customers",
      { customer: { firstName: "Ada", lastName: "Lovelace", email: "ada@example.com" } },
      "customerId",
    );
  });

  it("answers 400 while no EmailTemplate resource exists, writing nothing", async () => {
    const license = await newLicenseRow({ productId, licenseeEmail: "lee@example.com" });
    const before = await countRows("email_outbox");
    const res = await send({ licenseId: license.licenseId });
    expect(res.status).toBe(400);
    expect(res.body["message"]).toMatch(/^No email template: store a resource of type EmailTemplate/);
    expect(await countRows("email_outbox")).toBe(before);
  });

  describe("with templates", () => {
    beforeAll(async () => {
      await created(
        "/v1/resources",
        {
          resource: {
            name: "Your {ProductName} license",
            type: "EmailTemplate",
            data: "Dear {CustomerName}, {ProductName} {LicenseId} {UserKey} {ProductDownload} {Unknown}",
          },
        },
        "resourceId",
      );
    });

    it("renders every placeholder in subject and body and sends to the licensee", async () => {
      const license = await newLicenseRow({
        productId,
        customerId,
        licenseeName: "Lee Licensee",
        licenseeEmail: "lee@example.com",
      });
      const res = await send({ licenseId: license.licenseId });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ success: true, status: "queued" });
      expect(await outboxRow(res.body["emailId"])).toMatchObject({
        to_address: "lee@example.com",
        subject: "Your Ultra Editor license",
        body: `Dear Lee Licensee, Ultra Editor ${license.licenseId} ${license.userKey} https://example.com/download {Unknown}`,
        is_html: 0,
      });
    });

    it("takes the integer id (number or digits) and an explicit recipient", async () => {
      const license = await newLicenseRow({ productId, licenseeEmail: "lee@example.com" });
      for (const licenseId of [license.id, String(license.id)]) {
        const res = await send({ licenseId, to: "other@example.com" });
        expect(res.status, res.text).toBe(200);
        const row = await outboxRow(res.body["emailId"]);
        expect(row!.to_address).toBe("other@example.com");
        expect(row!.body).toContain(license.licenseId);
      }
    });

    it("falls back to the customer's address and name", async () => {
      const license = await newLicenseRow({ productId, customerId });
      const res = await send({ licenseId: license.licenseId });
      const row = await outboxRow(res.body["emailId"]);
      expect(row!.to_address).toBe("ada@example.com");
      expect(row!.body).toMatch(/^Dear Ada Lovelace,/);
    });

    it("answers 400 for an unknown license, a license without any address, or a bad recipient, writing nothing", async () => {
      const orphan = await newLicenseRow({ productId });
      const before = await countRows("email_outbox");
      const cases: [unknown, string | RegExp][] = [
        [{ licenseId: "licFFFFFFFF" }, "License licFFFFFFFF not found"],
        [{ licenseId: 987654 }, "License 987654 not found"],
        [
          { licenseId: orphan.licenseId },
          `License ${orphan.licenseId} has no licensee or customer email address; send "to"`,
        ],
      ];
      for (const [body, message] of cases) {
        const res = await send(body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body["message"]).toBe(message);
      }
      for (const body of [{ licenseId: orphan.licenseId, to: "nobody" }, {}, { licenseId: "" }, { licenseId: -3 }]) {
        const res = await send(body);
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.headers.get("content-type")).toContain("application/problem+json");
      }
      expect(await countRows("email_outbox")).toBe(before);
    });

    it("prefers the template whose code is the product's code, and escapes values in an HTML template", async () => {
      await created(
        "/v1/resources",
        {
          resource: {
            name: "{ProductName} for {CustomerName}",
            type: "EmailTemplate",
            code: productCode,
            dataFormat: "html",
            data: "<p>Hello {CustomerName}</p>",
          },
        },
        "resourceId",
      );
      const license = await newLicenseRow({
        productId,
        licenseeName: "<script>x</script> & Co",
        licenseeEmail: "lee@example.com",
      });
      const res = await send({ licenseId: license.licenseId });
      expect(await outboxRow(res.body["emailId"])).toMatchObject({
        subject: "Ultra Editor for <script>x</script> & Co",
        body: "<p>Hello &lt;script&gt;x&lt;/script&gt; &amp; Co</p>",
        is_html: 1,
      });
      // Another product still gets the generic template.
      const other = await newLicenseRow({ licenseeEmail: "lee@example.com" });
      expect((await outboxRow((await send({ licenseId: other.licenseId })).body["emailId"]))!.subject).toBe(
        "Your Product license",
      );
    });
  });
});

describe("the raw MIME message", () => {
  const stamp = { date: new Date("2026-03-02T10:04:05.000Z"), messageId: "m1@example.com", boundary: "=_b" };
  const split = (raw: string) => {
    const end = raw.indexOf("\r\n\r\n");
    return { headers: raw.slice(0, end).split("\r\n"), body: raw.slice(end + 4) };
  };

  it("has CRLF lines of at most 78 characters, the required headers and a base64 UTF-8 body", () => {
    const raw = buildMime(
      { from: "a@example.com", to: "b@example.org", subject: "Hello", body: "Grüße ✓\nline two", isHtml: false },
      stamp,
    );
    expect(raw.replace(/\r\n/g, "")).not.toMatch(/[\r\n]/);
    for (const line of raw.split("\r\n")) expect(line.length).toBeLessThanOrEqual(78);
    const { headers, body } = split(raw);
    expect(headers).toEqual([
      "From: a@example.com",
      "To: b@example.org",
      "Subject: Hello",
      "Date: Mon, 02 Mar 2026 10:04:05 +0000",
      "Message-ID: <m1@example.com>",
      "MIME-Version: 1.0",
      "Content-Type: text/plain; charset=utf-8",
      "Content-Transfer-Encoding: base64",
    ]);
    expect(decodeBase64Text(body)).toBe("Grüße ✓\nline two");
    const long = buildMime(
      { from: "a@example.com", to: "b@example.org", subject: "S", body: "x".repeat(1000), isHtml: false },
      stamp,
    );
    for (const line of long.split("\r\n")) expect(line.length).toBeLessThanOrEqual(76);
  });

  it("encodes a non-ASCII or long subject as folded encoded words of whole characters", () => {
    const subject = "Ihre Lizenz für Ünïcode ✓ — 😀 ".repeat(4).trim();
    const encoded = encodeSubject(subject);
    const lines = encoded.split("\r\n");
    expect(lines.length).toBeGreaterThan(1);
    for (const [i, line] of lines.entries()) {
      expect(line).toMatch(i === 0 ? /^=\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=$/ : /^ =\?UTF-8\?B\?[A-Za-z0-9+/=]+\?=$/);
      expect(line.trim().length).toBeLessThanOrEqual(75);
    }
    expect(decodeSubject(encoded)).toBe(subject);
    expect(encodeSubject("Looks =?like?= a word")).toMatch(/^=\?UTF-8\?B\?/);
  });

  it("cannot be given extra headers through the subject", () => {
    const raw = buildMime(
      { from: "a@example.com", to: "b@example.org", subject: "Hi\r\nBcc: evil@example.com", body: "x", isHtml: false },
      stamp,
    );
    expect(split(raw).headers.some((h) => /^bcc:/i.test(h))).toBe(false);
    expect(split(raw).headers).toContain("Subject: Hi Bcc: evil@example.com");
  });

  it("sends HTML as multipart/alternative with a plain-text part", () => {
    const html =
      '<html><head><style>p{}</style></head><body><p>Hello &amp; <b>welcome</b></p><a href="https://example.com/d">Download</a><br>Bye</body></html>';
    const raw = buildMime(
      { from: "a@example.com", to: "b@example.org", subject: "S", body: html, isHtml: true },
      stamp,
    );
    const { headers, body } = split(raw);
    expect(headers).toContain('Content-Type: multipart/alternative; boundary="=_b"');
    const parts = body.split(/\r\n--=_b(?:--)?\r\n/);
    expect(body.startsWith("--=_b\r\n")).toBe(true);
    expect(body.endsWith("--=_b--\r\n")).toBe(true);
    const [textPart, htmlPart] = parts
      .map((p) => p.replace(/^--=_b\r\n/, ""))
      .filter((p) => p.includes("Content-Type"));
    expect(textPart).toMatch(/^Content-Type: text\/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n/);
    expect(decodeBase64Text(split(textPart!).body)).toBe("Hello & welcome\nDownload (https://example.com/d)\nBye");
    expect(htmlPart).toMatch(/^Content-Type: text\/html; charset=utf-8/);
    expect(decodeBase64Text(split(htmlPart!).body)).toBe(html);
    expect(htmlToText("<script>alert(1)</script>ok")).toBe("ok");
  });
});
