/**
 * Webhook SSRF spellings (issue 9, adversarial catalogue) that test/webhooks.test.ts does not list: the same private,
 * loopback, link-local and metadata addresses written with a trailing dot, in upper case, percent-encoded, in
 * full-width digits, as one 32-bit number in hex, octal or decimal, in the short `a.b` form, with a port, inside the
 * IPv6 forms that carry IPv4 (compatible, 6to4, Teredo), and the local names under `.localhost`, `.internal`,
 * `.local` and `home.arpa` with a trailing dot. Each is refused on create (400) and nothing is stored.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, setSetting } from "../helpers";

const SUBSCRIPTIONS = "/v1/webhooks/subscriptions";

const SPELLINGS = [
  // IPv4-translated (::ffff:0:0/96) and local-use NAT64 (64:ff9b:1::/48) forms of 127.0.0.1, a single-label host,
  // and the documentation ranges.
  "https://[::ffff:0:7f00:1]/hook",
  "https://[64:ff9b:1::7f00:1]/hook",
  "https://metadata/computeMetadata/v1/",
  "https://192.0.2.10/hook",
  "https://198.51.100.10/hook",
  "https://203.0.113.10/hook",
  "https://127.0.0.1./hook",
  "HTTPS://LOCALHOST/hook",
  "https://localhost./hook",
  "https://%31%32%37.0.0.1/hook",
  "https://１２７.０.０.１/hook",
  "https://0/hook",
  "https://0.0.0.0./hook",
  "https://127.0.0.1:8443/hook",
  "https://0x7f000001/hook",
  "https://0x7f.0x0.0x0.0x1/hook",
  "https://017700000001/hook",
  "https://0177.1/hook",
  "https://10.1/hook",
  "https://169.254.43518/latest/meta-data",
  "https://0xa9fea9fe/latest/meta-data",
  "https://2852039166/latest/meta-data",
  "https://100.100.100.200/latest/meta-data",
  "https://[::ffff:100.100.100.200]/latest/meta-data",
  "https://[0:0:0:0:0:ffff:127.0.0.1]/hook",
  "https://[::127.0.0.1]/hook",
  "https://[2002:7f00:1::]/hook",
  "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook",
  "https://[fec0::1]/hook",
  "https://[100::1]/hook",
  "https://[::]:80/hook",
  "https://foo.localhost./hook",
  "https://metadata.google.internal./computeMetadata",
  "https://router.home.arpa/hook",
  "https://printer.local/hook",
  "https://127.0.0.1\\@hooks.example.com/hook",
];

describe("webhook URLs", () => {
  it("refuse every other spelling of a private, loopback, link-local or metadata address, storing nothing", async () => {
    await setSetting("Webhooks:AllowInsecureUrls", "false");
    try {
      for (const url of SPELLINGS) {
        const res = await admin("POST", SUBSCRIPTIONS, {
          subscription: { name: "ssrf-spelling", url, eventTypes: ["*"] },
        });
        expect(res.status, url).toBe(400);
        expect(res.body["message"], url).toMatch(/^The webhook url is refused/);
      }
      expect(
        await env.DB.prepare("SELECT count(*) AS n FROM webhook_subscriptions WHERE name = 'ssrf-spelling'").first("n"),
      ).toBe(0);
    } finally {
      await setSetting("Webhooks:AllowInsecureUrls", null);
    }
  });
});
