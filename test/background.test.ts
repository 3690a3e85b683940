/**
 * The Worker's non-HTTP entry points: the queue consumer's dispatch by job kind (ack, retry, unknown kinds) and the
 * cron trigger's housekeeping; plus the list features no route of this issue uses yet (include, countOnly).
 */
import { createExecutionContext, createMessageBatch, createScheduledController, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../src/index";
import { buildConfig } from "../src/kernel/config";
import { getDb } from "../src/db/client";
import { listBody } from "../src/http/list";
import { type JobHandler, consumeBatch } from "../src/kernel/jobs";
import { Resource } from "../src/routes/management/resources";
import { admin } from "./helpers";

describe("queue consumer", () => {
  it("hands each message to its kind's handler, retries a failing one and acknowledges unknown kinds", async () => {
    const seen: unknown[] = [];
    const handlers: Record<string, JobHandler> = {
      "test.ok": async (message) => {
        seen.push(message.body);
        message.ack();
      },
      "test.fails": async () => {
        throw new Error("receiver down");
      },
    };
    const batch = createMessageBatch<unknown>("licensing-webhooks", [
      { id: "m1", timestamp: new Date(), attempts: 1, body: { kind: "test.ok", n: 1 } },
      { id: "m2", timestamp: new Date(), attempts: 1, body: { kind: "test.fails" } },
      { id: "m3", timestamp: new Date(), attempts: 1, body: { kind: "nobody.handles.this" } },
      { id: "m4", timestamp: new Date(), attempts: 1, body: "not a job" },
    ]);
    const ctx = createExecutionContext();
    await consumeBatch(batch, env, ctx, handlers);
    const result = await getQueueResult(batch, ctx);
    expect(seen).toEqual([{ kind: "test.ok", n: 1 }]);
    expect(result.explicitAcks.sort()).toEqual(["m1", "m3", "m4"]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["m2"]);
  });
});

describe("cron housekeeping", () => {
  it("forgets logged-out tokens and download tokens once they have expired, and keeps the others", async () => {
    const past = "2020-01-01T00:00:00.000Z";
    const future = "2999-01-01T00:00:00.000Z";
    await env.DB.batch([
      env.DB.prepare("INSERT INTO revoked_tokens (jti, expires_at) VALUES ('old', ?), ('live', ?)").bind(past, future),
    ]);
    const ctx = createExecutionContext();
    worker.scheduled(createScheduledController({ scheduledTime: new Date(), cron: "*/15 * * * *" }), env, ctx);
    const { waitOnExecutionContext } = await import("cloudflare:test");
    await waitOnExecutionContext(ctx);
    const left = await env.DB.prepare("SELECT jti FROM revoked_tokens ORDER BY jti").all<{ jti: string }>();
    expect(left.results.map((r) => r.jti)).toEqual(["live"]);
  });
});

describe("list features for later routes", () => {
  const config = buildConfig({}, []).config;

  it("returns only the total with countOnly", async () => {
    await admin("POST", "/v1/resources", { resource: { name: "counted", type: "Count" } });
    await admin("POST", "/v1/resources", { resource: { name: "counted too", type: "Count" } });
    const body = await listBody(getDb(env.DB), Resource, { countOnly: true, filter: 'type == "Count"' }, config);
    expect(body).toEqual({ totalResourcesCount: 2 });
  });

  it("loads the relations named by include, and refuses unknown ones like unknown properties", async () => {
    const includes = {
      owner: async (_db: unknown, items: Record<string, unknown>[]) => {
        for (const item of items) item["owner"] = { name: `owner of ${item["name"]}` };
      },
    };
    const body = await listBody(
      getDb(env.DB),
      Resource,
      { include: "Owner", filter: 'type == "Count"', select: "name,owner" },
      config,
      { includes },
    );
    expect(body["resources"]).toEqual([
      { name: "counted", owner: { name: "owner of counted" } },
      { name: "counted too", owner: { name: "owner of counted too" } },
    ]);
    await expect(listBody(getDb(env.DB), Resource, { include: "secrets" }, config, { includes })).rejects.toMatchObject(
      {
        status: 500,
        message: "No property or field 'secrets' exists in type 'Resource'",
      },
    );
  });
});
