/**
 * Issue 14, "Abuse and growth": the cron trigger prunes license traces (Licensing:TraceRetentionDays, 365), reports
 * with their R2 bodies (Licensing:ReportRetentionDays, 90) and the email outbox (Email:OutboxRetentionDays, 30),
 * and keeps whatever is younger.
 */
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../src/index";
import { admin, setSetting } from "./helpers";
import { newLicense } from "./samples/licensing";

const DAY = 86_400_000;

async function cronAt(at: number): Promise<void> {
  const ctx = createExecutionContext();
  worker.scheduled(createScheduledController({ scheduledTime: new Date(at), cron: "*/15 * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

const count = async (sql: string, ...binds: unknown[]) =>
  (
    await env.DB.prepare(sql)
      .bind(...binds)
      .first<{ n: number }>()
  )?.n ?? 0;

describe("retention", () => {
  it("prunes traces, reports with their R2 bodies and the outbox past their settings, and keeps younger ones", async () => {
    const start = Date.now();
    const license = await newLicense("Activation", 1);
    const small = await admin("POST", "/v1/report", { name: "ExceptionReport", content: "small" });
    const large = await admin("POST", "/v1/report", { name: "ExceptionReport", content: "x".repeat(300 * 1024) });
    expect([small.status, large.status]).toEqual([200, 200]);
    const reportIds = [small.body["reportId"], large.body["reportId"]];
    const key = (
      await env.DB.prepare("SELECT content_key FROM reports WHERE id = ?")
        .bind(large.body["reportId"])
        .first<{ content_key: string }>()
    )?.content_key;
    expect(key).toMatch(/^reports\/[0-9a-f-]{36}$/);
    expect(await env.ARTIFACTS!.head(key!)).not.toBeNull();
    const now = new Date(start).toISOString();
    await env.DB.batch([
      env.DB.prepare("INSERT INTO license_traces (license_id, action, created_at) VALUES (?, 1, ?)").bind(
        license.id,
        now,
      ),
      env.DB.prepare(
        "INSERT INTO email_outbox (to_address, subject, body, status, created_at) VALUES ('a@example.com', 's', 'b', 'sent', ?)",
      ).bind(now),
    ]);
    const reports = () => count(`SELECT count(*) AS n FROM reports WHERE id IN (${reportIds.join(",")})`);
    const traces = () => count("SELECT count(*) AS n FROM license_traces WHERE license_id = ?", license.id);
    const outbox = () => count("SELECT count(*) AS n FROM email_outbox WHERE created_at = ?", now);
    // The row inserted here (no operation of this test writes one).
    const t0 = await traces();
    expect(t0).toBeGreaterThanOrEqual(1);

    await cronAt(start + 29 * DAY);
    expect([await traces(), await reports(), await outbox()]).toEqual([t0, 2, 1]);
    await cronAt(start + 31 * DAY);
    expect([await traces(), await reports(), await outbox()]).toEqual([t0, 2, 0]);
    await cronAt(start + 91 * DAY);
    expect([await traces(), await reports()]).toEqual([t0, 0]);
    expect(await env.ARTIFACTS!.head(key!)).toBeNull();
    await cronAt(start + 364 * DAY);
    expect(await traces()).toBe(t0);
    await cronAt(start + 366 * DAY);
    expect(await traces()).toBe(0);
  });

  it("follows the retention settings", async () => {
    await setSetting("Licensing:ReportRetentionDays", "2");
    try {
      const start = Date.now();
      const report = await admin("POST", "/v1/report", { name: "ExceptionReport", content: "short-lived" });
      const exists = () => count("SELECT count(*) AS n FROM reports WHERE id = ?", report.body["reportId"]);
      await cronAt(start + 1 * DAY);
      expect(await exists()).toBe(1);
      await cronAt(start + 3 * DAY);
      expect(await exists()).toBe(0);
    } finally {
      await setSetting("Licensing:ReportRetentionDays", null);
    }
  });
});
