import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
it("has the schema", async () => {
  const r = await env.DB.prepare("select count(*) as n from resources").first<{ n: number }>();
  expect(r?.n).toBe(0);
});
