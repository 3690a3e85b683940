/**
 * Issue 14: management and auth answers (keys, tokens, customer records) carry `Cache-Control: no-store`, errors
 * included, on REST and gRPC; answers that may be cached keep their own header.
 */
import { describe, expect, it } from "vitest";
import { ADMIN, admin, call, login } from "./helpers";

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
});
