/**
 * Issue 14: management and auth answers (keys, tokens, customer records) carry `Cache-Control: no-store`, errors
 * included, on REST and gRPC; answers that may be cached keep their own header.
 */
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { bytesOf, newProduct, upload } from "./artifacts-kit";
import { ADMIN, BASE, admin, call, login, setSetting } from "./helpers";

describe("Cache-Control", () => {
  it("is no-store on management and auth answers, successes and errors, REST and gRPC", async () => {
    const token = await login();
    const user = await admin("POST", "/v1/users", {
      user: { userName: "cache-control", password: "Secret#123-long", roles: ["Sales"] },
    });
    const answers = {
      "list licenses": await admin("GET", "/v1/licenses"),
      settings: await admin("GET", "/v1/settings"),
      "create an API key": await admin("POST", "/v1/api-keys", {
        apiKey: { name: "cache-control", ownerId: user.body["userId"] },
      }),
      "unknown id": await admin("PUT", "/v1/customers", { customer: { id: 999_999, name: "x" } }),
      "no credential": await call("GET", "/v1/users"),
      login: await call("POST", "/v1/auth/login", { body: { username: ADMIN.username, password: ADMIN.password } }),
      "failed login": await call("POST", "/v1/auth/login", {
        body: { username: ADMIN.username, password: "wrong-password" },
      }),
      "current user": await call("GET", "/v1/auth/user", { token }),
      "gRPC Authenticate": await call("POST", "/licensing.v1.Authentication/Authenticate", {
        body: { username: ADMIN.username, password: ADMIN.password },
        headers: { "content-type": "application/json" },
      }),
    };
    expect(answers["create an API key"].status).toBe(200);
    expect(answers["gRPC Authenticate"].status).toBe(200);
    for (const [what, res] of Object.entries(answers)) expect(res.headers.get("cache-control"), what).toBe("no-store");
  });

  it("leaves the cacheable answers their own", async () => {
    expect((await call("GET", "/v1/extensions/keys")).headers.get("cache-control")).toBe("public, max-age=300");
  });

  it("keeps an ungated artifact no longer than a feed, never immutable: the release can be gated later", async () => {
    await setSetting("Updates:AllowPublicApplicationReleases", "true");
    try {
      const product = await newProduct();
      const created = await admin("POST", `/v1/products/${product.id}/releases`, {
        productRelease: { version: "1.0.0", public: true, requiresMaintenance: false },
      });
      expect(created.status, created.text).toBe(200);
      const releaseId = created.body["productReleaseId"];
      const path = `/v1/products/${product.id}/releases/${releaseId}/downloads`;
      expect((await upload(path, bytesOf(256, 9), { partName: "Free.exe" })).status).toBe(201);
      // The URL the feed hands out, pinned to the artifact's id.
      const feed = await exports.default.fetch(`${BASE}/v1/updates/${product.code}/latest.yml`);
      const url = parseYaml(await feed.text()).files[0].url as string;
      expect(url).toContain("?artifact=");
      const get = async (headers: Record<string, string> = {}) => {
        const res = await exports.default.fetch(url, { headers });
        await res.arrayBuffer();
        return res;
      };
      const whole = await get();
      expect([whole.status, whole.headers.get("cache-control")]).toEqual([200, "public, max-age=60"]);
      const etag = whole.headers.get("etag")!;
      const revalidated = await get({ "if-none-match": etag });
      expect([revalidated.status, revalidated.headers.get("cache-control")]).toEqual([304, "public, max-age=60"]);
      // Its lifetime is the feed's: Updates:FeedCacheSeconds.
      await setSetting("Updates:FeedCacheSeconds", "17");
      expect((await get()).headers.get("cache-control")).toBe("public, max-age=17");
      await setSetting("Updates:FeedCacheSeconds", null);
      // Gated later: the same URL is refused and private, and a cache kept the ungated answer at most that long.
      const gated = await admin("PUT", `/v1/products/${product.id}/releases`, {
        productRelease: { id: releaseId, requiresMaintenance: true },
      });
      expect(gated.status, gated.text).toBe(200);
      const refused = await get();
      expect([refused.status, refused.headers.get("cache-control")]).toEqual([403, "no-store"]);
    } finally {
      await setSetting("Updates:AllowPublicApplicationReleases", null);
      await setSetting("Updates:FeedCacheSeconds", null);
    }
  });
});
