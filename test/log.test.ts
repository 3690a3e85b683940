/**
 * The service log (CONTRACT section 3 "Log entry"): every request that fails with 5xx is written off the response
 * path, with its request id, stack and request properties; a failing write never changes an answer; `/v1/log`
 * lists, names levels and deletes; the cron trigger prunes after Application:LogRetentionDays.
 */
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { Handler } from "hono";
import { describe, expect, it } from "vitest";
import type { AppEnv } from "../src/http/app-env";
import { createApp } from "../src/app/app";
import { getDb } from "../src/db/client";
import { ApiError, GrpcCode, LicensingError } from "../src/kernel/errors";
import { housekeeping } from "../src/app/housekeeping";
import worker from "../src/index";
import { LOG_LEVELS, ServiceLog, exceptionText } from "../src/db/logging";
import { BASE, admin, call, keyFor, setSetting } from "./helpers";

type Entry = {
  id: number;
  timestamp: string;
  level: number | string;
  message: string;
  exception?: string;
  properties?: string;
  requestId?: string;
};

const unique = () => crypto.randomUUID().slice(0, 8);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const listFilter = (filter: string, extra = "") => admin("GET", `/v1/log?filter=${encodeURIComponent(filter)}${extra}`);

/** The entries of one request: the write happens after the response, so wait for it briefly. */
async function entriesOf(requestId: string, atLeast = 1): Promise<Entry[]> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const res = await listFilter(`requestId == "${requestId}"`);
    expect(res.status, res.text).toBe(200);
    if (res.body["logs"].length >= atLeast || Date.now() > deadline) return res.body["logs"];
    await sleep(20);
  }
}

/** Writes entries straight to the table, as a request's ServiceLog does, with chosen timestamps. */
async function seed(entries: { message: string; level?: number; timestamp?: string }[]): Promise<void> {
  const now = new Date().toISOString();
  await env.DB.batch(
    entries.map((e) =>
      env.DB.prepare("INSERT INTO logs (timestamp, level, message) VALUES (?, ?, ?)").bind(
        e.timestamp ?? now,
        e.level ?? 2,
        e.message,
      ),
    ),
  );
}

/** The app with one extra route, for failures no public route can be made to produce. */
function appWith(handler: Handler<AppEnv>) {
  const app = createApp();
  app.get("/v1/test/route", handler);
  return app;
}

/** env with a D1 binding whose batch always fails (the service log writes in one batch). */
function envWithFailingBatch(): typeof env {
  const DB = new Proxy(env.DB, {
    get(target, prop) {
      if (prop === "batch") return () => Promise.reject(new Error("D1 is down"));
      const value = Reflect.get(target, prop) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { ...env, DB };
}

describe("requests that fail with 5xx are logged off the response path", () => {
  it("writes a 5xx with message, stack, request properties and request id", async () => {
    const app = appWith((c) => {
      c.set("principal", { userName: "u-log-test" } as AppEnv["Variables"]["principal"]);
      throw new ApiError(503, "The mail server is unreachable");
    });
    const requestId = `ray-${unique()}`;
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(`${BASE}/v1/test/route?userKey=SECRET-KEY`, {
        headers: { "cf-ray": requestId, "cf-connecting-ip": "203.0.113.50" },
      }),
      env,
      ctx,
    );
    expect(res.status).toBe(503);
    await waitOnExecutionContext(ctx);
    const [entry, ...more] = await entriesOf(requestId);
    expect(more).toEqual([]);
    expect(entry).toMatchObject({ level: 4, message: "The mail server is unreachable", requestId });
    expect(entry!.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(entry!.exception).toContain("The mail server is unreachable");
    expect(entry!.exception).toMatch(/\n\s+at /);
    const properties = JSON.parse(entry!.properties!);
    expect(properties).toMatchObject({
      method: "GET",
      path: "/v1/test/route",
      status: 503,
      clientIp: "203.0.113.50",
      user: "u-log-test",
    });
    // The query string (which can carry a user key) is never logged.
    expect(JSON.stringify(entry)).not.toContain("SECRET-KEY");
  });

  it("does not log a filter, sort or select the service refuses (SPEC's 500 for an unknown property)", async () => {
    // The caller's mistake, not a failure of the service: answered as SPEC says, kept out of the service log.
    const requestId = `ray-${unique()}`;
    const key = await keyFor(["Sales"]);
    for (const query of ["filter=nope%20==%201", "filter=name%20==", "sort=nope", "select=nope"]) {
      const res = await call("GET", `/v1/resources?${query}`, { key, headers: { "cf-ray": requestId } });
      expect(res.status, query).toBe(500);
      expect(res.body["message"], query).toMatch(
        /^(No property or field 'nope' exists in type 'Resource'|Syntax error)/,
      );
    }
    // A logged request after them, so their entries (if any were written) would be there by now.
    const app = appWith(() => {
      throw new ApiError(503, "marker");
    });
    const ctx = createExecutionContext();
    await app.fetch(new Request(`${BASE}/v1/test/route`, { headers: { "cf-ray": requestId } }), env, ctx);
    await waitOnExecutionContext(ctx);
    const entries = await entriesOf(requestId);
    expect(entries.map((e) => e.message)).toEqual(["marker"]);
  });

  it("logs an unexpected exception with its stack, and the answer points at the entry", async () => {
    const app = appWith(() => {
      throw new TypeError("boom", { cause: new Error("the root cause") });
    });
    const requestId = `ray-${unique()}`;
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request(`${BASE}/v1/test/route`, { headers: { "cf-ray": requestId } }), env, ctx);
    expect(res.status).toBe(500);
    const body = (await res.json()) as { message: string };
    expect(body.message).toBe(`An unexpected error occurred. See the service log for request ${requestId}`);
    expect(body.message).not.toContain("boom");
    await waitOnExecutionContext(ctx);
    const [entry] = await entriesOf(requestId);
    expect(entry).toMatchObject({ level: 4, message: "Unhandled error: boom" });
    expect(entry!.exception).toMatch(/^TypeError: boom\n\s+at /);
    expect(entry!.exception).toContain("Caused by: Error: the root cause");
  });

  it("does not log answers below 500, nor licensing answers (520 + gRPC code)", async () => {
    const requestId = `ray-${unique()}`;
    expect(
      (
        await call("DELETE", "/v1/resources/999999", {
          key: await keyFor(["Administrator"]),
          headers: { "cf-ray": requestId },
        })
      ).status,
    ).toBe(400);
    expect((await call("GET", "/v1/no-such-route", { headers: { "cf-ray": requestId } })).status).toBe(404);
    const ctx = createExecutionContext();
    const app = appWith(() => {
      throw new LicensingError(GrpcCode.NotFound, "License key not found");
    });
    expect(
      (await app.fetch(new Request(`${BASE}/v1/test/route`, { headers: { "cf-ray": requestId } }), env, ctx)).status,
    ).toBe(525);
    await waitOnExecutionContext(ctx);
    await sleep(50);
    expect(await entriesOf(requestId, 0)).toEqual([]);
  });

  it("writes a request's entries together, after the response", async () => {
    const app = appWith((c) => {
      c.get("log").warning("first", { properties: { step: 1 } });
      c.get("log").warning("second");
      return c.text("done");
    });
    const requestId = `ray-${unique()}`;
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request(`${BASE}/v1/test/route`, { headers: { "cf-ray": requestId } }), env, ctx);
    expect(await res.text()).toBe("done");
    await waitOnExecutionContext(ctx);
    const entries = await entriesOf(requestId, 2);
    expect(entries.map((e) => [e.level, e.message, e.properties])).toEqual([
      [3, "first", '{"step":1}'],
      [3, "second", undefined],
    ]);
  });

  it("never changes the answer when the log cannot be written", async () => {
    const errorSpy: unknown[] = [];
    const realError = console.error;
    console.error = (...args: unknown[]) => void errorSpy.push(args);
    try {
      const handlers: Handler<AppEnv>[] = [
        () => {
          throw new Error("boom while D1 is down");
        },
        (c) => {
          c.get("log").warning("cannot be stored");
          return c.text("fine");
        },
      ];
      for (const handler of handlers) {
        const ctx = createExecutionContext();
        const res = await appWith(handler).fetch(new Request(`${BASE}/v1/test/route`), envWithFailingBatch(), ctx);
        await waitOnExecutionContext(ctx);
        if (res.status === 500)
          expect(((await res.json()) as { message: string }).message).toMatch(/^An unexpected error occurred/);
        else expect(await res.text()).toBe("fine");
      }
    } finally {
      console.error = realError;
    }
    expect(
      errorSpy.some((args) => String((args as unknown[])[0]).includes("service log: entries could not be written")),
    ).toBe(true);
  });

  it("keeps at most 50 entries of one request and clips long texts", async () => {
    const log = new ServiceLog();
    for (let i = 0; i < 60; i++) log.information(`entry ${i}`);
    expect(log.pending).toBe(50);
    const requestId = `bulk-${unique()}`;
    await log.flush(getDb(env.DB), requestId);
    expect(log.pending).toBe(0);
    expect((await listFilter(`requestId == "${requestId}"`, "&take=100")).body["totalLogsCount"]).toBe(50);
    expect(exceptionText("x".repeat(20_000)).length).toBeLessThan(8_100);
  });
});

describe("GET /v1/log and /v1/log/levels", () => {
  it("names the levels by number", async () => {
    const res = await admin("GET", "/v1/log/levels");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      code: 0,
      levels: ["Verbose", "Debug", "Information", "Warning", "Error", "Fatal"],
    });
    expect(LOG_LEVELS.indexOf("Fatal")).toBe(5);
  });

  it("follows the list conventions: filter (by level name or number), sort, skip, take, select, total", async () => {
    const tag = `list-${unique()}`;
    await seed([
      { message: `${tag} a`, level: 3, timestamp: "2030-01-01T00:00:01.000Z" },
      { message: `${tag} b`, level: 4, timestamp: "2030-01-01T00:00:02.000Z" },
      { message: `${tag} c`, level: 3, timestamp: "2030-01-01T00:00:03.000Z" },
    ]);
    const warnings = await listFilter(
      `message.StartsWith("${tag}") && level == "Warning"`,
      "&sort=-timestamp&select=message,level",
    );
    expect(warnings.body).toEqual({
      success: true,
      code: 0,
      logs: [
        { message: `${tag} c`, level: 3 },
        { message: `${tag} a`, level: 3 },
      ],
      totalLogsCount: 2,
    });
    const page = await listFilter(`message.StartsWith("${tag}") && level >= 3`, "&skip=1&take=1");
    expect(page.body["logs"].map((e: Entry) => e.message)).toEqual([`${tag} b`]);
    expect(page.body["totalLogsCount"]).toBe(3);
    expect(
      (await listFilter(`message.StartsWith("${tag}") && level >= "Error"`)).body["logs"].map((e: Entry) => e.message),
    ).toEqual([`${tag} b`]);
    expect((await listFilter("nosuch == 1")).status).toBe(500);
  });

  it("writes levels as names with Application:SerializeJSonEnumAsString", async () => {
    const tag = `enum-${unique()}`;
    await seed([{ message: tag, level: 5 }]);
    await setSetting("Application:SerializeJSonEnumAsString", "true");
    try {
      expect((await listFilter(`message == "${tag}"`)).body["logs"][0].level).toBe("Fatal");
    } finally {
      await setSetting("Application:SerializeJSonEnumAsString", null);
    }
  });
});

describe("DELETE /v1/log", () => {
  const count = async (tag: string) =>
    (await listFilter(`message.StartsWith("${tag}")`)).body["totalLogsCount"] as number;

  it("deletes entries before a date and of a level, answering how many", async () => {
    const tag = `del-${unique()}`;
    await seed([
      { message: `${tag} old warning`, level: 3, timestamp: "2001-01-01T00:00:00.000Z" },
      { message: `${tag} old error`, level: 4, timestamp: "2001-01-01T00:00:00.000Z" },
      { message: `${tag} new warning`, level: 3, timestamp: "2031-01-01T00:00:00.000Z" },
    ]);
    const res = await admin("DELETE", "/v1/log?before=2002-01-01T00:00:00Z&level=Warning");
    expect(res.body).toEqual({ success: true, code: 0, deleted: 1 });
    expect(await count(tag)).toBe(2);
    expect((await admin("DELETE", "/v1/log?before=2002-01-01&level=4")).body["deleted"]).toBe(1);
    expect((await listFilter(`message.StartsWith("${tag}")`)).body["logs"].map((e: Entry) => e.message)).toEqual([
      `${tag} new warning`,
    ]);
  });

  it("refuses a bad date or level with problem details and deletes nothing", async () => {
    const tag = `bad-${unique()}`;
    await seed([{ message: tag, timestamp: "2001-01-01T00:00:00.000Z" }]);
    for (const query of ["before=yesterday", "level=Loud", "level=9", "before=2002-01-01&level=Chatty"]) {
      const res = await admin("DELETE", `/v1/log?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
    }
    expect(await count(tag)).toBe(1);
  });

  it("with no condition deletes everything, and records who cleared the log", async () => {
    const tag = `all-${unique()}`;
    await seed([{ message: `${tag} 1` }, { message: `${tag} 2` }]);
    const key = await keyFor(["Sales"], 15, `clearer${unique()}`);
    const requestId = `ray-${unique()}`;
    const res = await call("DELETE", "/v1/log", { key, headers: { "cf-ray": requestId } });
    expect(res.status).toBe(200);
    expect(res.body["deleted"]).toBeGreaterThanOrEqual(2);
    expect(await count(tag)).toBe(0);
    const [audit] = await entriesOf(requestId);
    expect(audit).toMatchObject({ level: 2, message: `${res.body["deleted"]} log entries deleted` });
    expect(JSON.parse(audit!.properties!)).toMatchObject({
      user: expect.stringMatching(/^clearer/),
      before: null,
      level: null,
    });
  });
});

describe("retention", () => {
  const days = (n: number) => new Date(Date.now() - n * 86_400_000).toISOString();

  async function runCron(): Promise<void> {
    const ctx = createExecutionContext();
    worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "*/15 * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
  }
  const messages = async (tag: string) =>
    (await listFilter(`message.StartsWith("${tag}")`, "&sort=message")).body["logs"].map((e: Entry) =>
      e.message.slice(tag.length + 1),
    );

  it("the cron trigger prunes entries older than Application:LogRetentionDays (default 30)", async () => {
    const tag = `ret-${unique()}`;
    await seed([
      { message: `${tag} 31 days`, timestamp: days(31) },
      { message: `${tag} 29 days`, timestamp: days(29) },
      { message: `${tag} today`, timestamp: days(0) },
    ]);
    await runCron();
    expect(await messages(tag)).toEqual(["29 days", "today"]);
  });

  it("follows a changed retention", async () => {
    const tag = `ret-${unique()}`;
    await seed([
      { message: `${tag} 40 days`, timestamp: days(40) },
      { message: `${tag} 70 days`, timestamp: days(70) },
    ]);
    expect(
      (await admin("PUT", "/v1/settings", { settings: [{ name: "Application:LogRetentionDays", value: "60" }] }))
        .status,
    ).toBe(200);
    try {
      await runCron();
      expect(await messages(tag)).toEqual(["40 days"]);
      await setSetting("Application:LogRetentionDays", "10");
      expect((await housekeeping(env, new Date()))["logs"]).toBeGreaterThanOrEqual(1);
      expect(await messages(tag)).toEqual([]);
    } finally {
      await setSetting("Application:LogRetentionDays", null);
    }
  });
});
