/**
 * Sign-in links by email are bounded per address (issue 36, N15): while three unused, unexpired links of a customer
 * are live, asking again, from any client address, sends nothing more (the answer is the same, so it tells nothing
 * about the address); once one is used, a new one can be sent.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { admin, call } from "./helpers";

const ask = (email: string, i: number) =>
  call("POST", "/v1/portal/sign-in", { body: { email }, headers: { "cf-connecting-ip": `192.0.2.${10 + i}` } });

async function mails(to: string): Promise<string[]> {
  const { results } = await env.DB.prepare("SELECT body FROM email_outbox WHERE to_address = ? ORDER BY id")
    .bind(to)
    .all<{ body: string }>();
  return results.map((r) => r.body);
}

describe("sign-in links by email", () => {
  it("are at most three live per address, from any client address; a used one makes room for another", async () => {
    const email = `flood-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const customer = await admin("POST", "/v1/customers", { customer: { firstName: "Flo", lastName: "Od", email } });
    expect(customer.status, customer.text).toBe(200);
    for (let i = 0; i < 8; i++) {
      const res = await ask(email, i);
      expect(res.status, res.text).toBe(200);
      // The links are sent after the answer: each request's is written before the next is asked.
      await vi.waitFor(async () => expect((await mails(email)).length).toBe(Math.min(i + 1, 3)), { timeout: 5000 });
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(await mails(email)).toHaveLength(3);
    const [first] = await mails(email);
    const link = /\/v1\/portal\/sign-in\/[0-9A-Za-z]{32}/.exec(first!)![0];
    const used = await call("POST", "/v1/portal/sign-in", { body: { linkToken: link.split("/").pop() } });
    expect(used.status, used.text).toBe(200);
    expect((await ask(email, 20)).status).toBe(200);
    await vi.waitFor(async () => expect(await mails(email)).toHaveLength(4), { timeout: 5000 });
  });
});
