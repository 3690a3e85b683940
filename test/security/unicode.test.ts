/**
 * Unicode and control characters (issue 9, adversarial catalogue): NUL, C1 controls, right-to-left overrides and
 * other bidirectional marks, emoji, and lone surrogates, in user names, keys, product codes, file names, free text and
 * filters. Names that identify refuse what would make them read as something else; free text keeps exactly what was
 * sent; text that UTF-8 cannot carry is refused everywhere (it would be stored and signed as something else); and no
 * spelling reaches a 500 other than the filter parser's own.
 */
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ADMIN, BASE, admin, call, countRows, login } from "../helpers";
import { newLicense } from "../samples/licensing";

const DECEPTIVE = {
  NUL: "\u0000",
  "line feed": "\n",
  DEL: "\u007f",
  "C1 NEL": "\u0085",
  "RTL override": "\u202e",
  "LTR mark": "\u200e",
  "RTL isolate": "\u2067",
  "Arabic letter mark": "\u061c",
};

/** A JSON body with a lone surrogate: JSON.stringify writes it as the escape `\ud800`, which is valid JSON. */
const withLoneSurrogate = (body: unknown) => JSON.stringify(body);

describe("user names", () => {
  it("refuse control and bidirectional characters, naming the field, and create nobody", async () => {
    await admin("GET", "/v1/users"); // the first request creates the configured administrator
    const before = await countRows("users");
    for (const [what, ch] of Object.entries(DECEPTIVE)) {
      const res = await admin("POST", "/v1/users", { user: { userName: `adm${ch}in`, password: "Secret#123456" } });
      expect(res.status, what).toBe(400);
      expect(Object.keys(res.body["errors"]), what).toEqual(["user.userName"]);
    }
    expect(await countRows("users")).toBe(before);
  });

  it("take emoji and other scripts, and sign in with them", async () => {
    for (const userName of ["😀-ops", "Ørjan", "山田", "👩‍💻dev"]) {
      expect(
        (await admin("POST", "/v1/users", { user: { userName, password: "Secret#123456" } })).status,
        userName,
      ).toBe(200);
      expect(await login(userName, "Secret#123456")).toMatch(/^ey/);
    }
  });

  it("refuse a lone surrogate, which UTF-8 would turn into U+FFFD", async () => {
    const res = await call("POST", "/v1/users", {
      key: ADMIN.key,
      raw: withLoneSurrogate({ user: { userName: "x\ud800", password: "Secret#123456" } }),
    });
    expect(res.status).toBe(400);
    expect(res.body["errors"]).toHaveProperty(["user.userName"]);
  });
});

describe("product codes", () => {
  it("are letters, digits, '.', '_' and '-', and never a dot segment of the update URLs", async () => {
    for (const code of [".", "..", "a\u0000", "r\u202eb", "😀", "é", "a/b", "a%2Fb", " a"]) {
      const res = await admin("POST", "/v1/products", { product: { code, name: "x" } });
      expect(res.status, JSON.stringify(code)).toBe(400);
    }
    expect(
      (await admin("POST", "/v1/products", { product: { code: "...", name: "three dots are a name" } })).status,
    ).toBe(200);
    expect(await countRows("products")).toBe(1);
  });
});

describe("free text", () => {
  it("keeps NUL, controls, bidirectional marks and emoji exactly as sent", async () => {
    const name = `a\u0000b\u0085c\u202ed😀e\u200f`;
    const created = await admin("POST", "/v1/resources", { resource: { name, data: name } });
    expect(created.status, created.text).toBe(200);
    const listed = await admin(
      "GET",
      `/v1/resources?filter=${encodeURIComponent(`id == ${created.body["resourceId"]}`)}`,
    );
    expect(listed.body["resources"][0]).toMatchObject({ name, data: name });
  });

  it("refuses a lone surrogate in any JSON body, naming where, and writes nothing", async () => {
    const before = await Promise.all(["resources", "settings", "licenses"].map(countRows));
    const cases: [string, string, unknown, string][] = [
      ["POST", "/v1/resources", { resource: { name: "ok", description: "half \udc00 pair" } }, "resource.description"],
      [
        "PUT",
        "/v1/settings",
        { settings: [{ name: "Application:HealthCheckEndPoint", value: "/h\ud83d" }] },
        "settings[0].value",
      ],
      ["POST", "/v1/licenses", { license: { productId: 1, licenseeName: "\ud83d\ud83d" } }, "license.licenseeName"],
    ];
    for (const [method, path, body, where] of cases) {
      const res = await call(method, path, { key: ADMIN.key, raw: withLoneSurrogate(body) });
      expect(res.status, path).toBe(400);
      expect(res.headers.get("content-type"), path).toContain("application/problem+json");
      expect(Object.keys(res.body["errors"]), path).toContain(where);
    }
    expect(await Promise.all(["resources", "settings", "licenses"].map(countRows))).toEqual(before);
    // A surrogate pair (an emoji written as two escapes) is fine.
    expect(
      (await call("POST", "/v1/resources", { key: ADMIN.key, raw: '{"resource":{"name":"\\ud83d\\ude00"}}' })).status,
    ).toBe(200);
  });
});

describe("keys", () => {
  it("a user key with controls or bidirectional marks is simply unknown: licensing 525, update routes as anonymous", async () => {
    const lic = await newLicense("Activation");
    for (const ch of Object.values(DECEPTIVE)) {
      const res = await admin("POST", "/v1/license/validate", { userKey: `${lic.userKey}${ch}x` });
      expect(res.status, JSON.stringify(ch)).toBe(525);
    }
    const lone = await call("POST", "/v1/license/validate", {
      key: ADMIN.key,
      raw: withLoneSurrogate({ userKey: `${lic.userKey}\ud800` }),
    });
    expect(lone.status).toBe(400);
    expect(
      (
        await call("POST", "/v1/license/activate", {
          key: ADMIN.key,
          raw: withLoneSurrogate({ userKey: lic.userKey, machineId: "PC\udfff" }),
        })
      ).status,
    ).toBe(400);
    expect(await countRows("license_tokens")).toBe(0);
  });

  it("an API key with non-ASCII or invisible characters, or in another case, is refused with 401, never a 500", async () => {
    for (const key of [`${ADMIN.key}\u200b`, ADMIN.key.toLowerCase(), `${ADMIN.key}\t0`]) {
      const res = await exports.default.fetch(`${BASE}/v1/auth/session`, { headers: { "x-api-key": key } });
      expect(res.status, JSON.stringify(key)).toBe(401);
    }
  });

  it("a password with emoji and controls is just bytes to PBKDF2", async () => {
    // At least 12 characters (the minimum length); the last one, a bidirectional mark, is what tells them apart.
    const password = "p\u0000ß😀-password\u202e";
    expect((await admin("POST", "/v1/users", { user: { userName: "unicode-pw", password } })).status).toBe(200);
    expect(await login("unicode-pw", password)).toMatch(/^ey/);
    expect(
      (await call("POST", "/v1/auth/login", { body: { username: "unicode-pw", password: "p\u0000ß😀-password" } }))
        .status,
    ).toBe(401);
  });
});

describe("filters", () => {
  it("match NUL, bidirectional marks and emoji in literals exactly, and count code points in Length", async () => {
    const names = ["nul\u0000x", "rtl\u202ex", "emoji😀"];
    for (const name of names)
      expect((await admin("POST", "/v1/customers", { customer: { company: name } })).status).toBe(200);
    for (const name of names) {
      const res = await admin(
        "GET",
        `/v1/customers?filter=${encodeURIComponent(`company == "${name}"`)}&select=company`,
      );
      expect(res.body["customers"], JSON.stringify(name)).toEqual([{ company: name }]);
    }
    const escaped = await admin(
      "GET",
      `/v1/customers?filter=${encodeURIComponent('company == "rtl\\u202ex"')}&select=company`,
    );
    expect(escaped.body["customers"]).toEqual([{ company: "rtl\u202ex" }]);
    const length = await admin(
      "GET",
      `/v1/customers?filter=${encodeURIComponent('company.Length == 6 && company.StartsWith("emoji")')}&select=company`,
    );
    expect(length.body["customers"]).toEqual([{ company: "emoji😀" }]);
  });

  it("answer a control character outside a literal with the parser's message, and invalid UTF-8 with no match", async () => {
    const nul = await admin("GET", `/v1/customers?filter=${encodeURIComponent("company\u0000 == 1")}`);
    expect(nul.body).toEqual({
      success: false,
      code: 500,
      message: "Syntax error at position 7: Invalid character '\u0000'",
    });
    const rtl = await admin("GET", `/v1/customers?filter=${encodeURIComponent("company \u202e== 1")}`);
    expect(rtl.status).toBe(500);
    expect(rtl.body["message"]).toMatch(/^Syntax error at position 8/);
    // %ED%A0%80 is a surrogate in UTF-8 form (invalid UTF-8): the query keeps such bytes as their percent text, so
    // they never become a lone surrogate in a bound value; they match nothing, or are the parser's syntax error.
    const surrogate = await admin("GET", "/v1/customers?filter=company%20%3D%3D%20%22x%ED%A0%80y%22");
    expect(surrogate.body).toMatchObject({ success: true, totalCustomersCount: 0 });
    const invalid = await admin("GET", "/v1/customers?filter=%FF%20%3D%3D%201");
    expect(invalid.body).toEqual({
      success: false,
      code: 500,
      message: "Syntax error at position 0: Invalid character '%'",
    });
  });
});

describe("stored text read back by D1", () => {
  it("is what was sent: no row holds U+FFFD where the client sent something else", async () => {
    const rows = await env.DB.prepare("SELECT name FROM resources WHERE instr(name, char(65533)) > 0").all();
    expect(rows.results).toEqual([]);
  });
});
