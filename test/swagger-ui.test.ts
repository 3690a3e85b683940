/**
 * Swagger UI is served by the service itself (issue 14, issue 16): `/swagger` and `/swagger/` answer the page, and
 * everything the page loads comes from this origin (swagger-ui-dist's pinned files), so it works offline and no
 * CDN can change what runs next to an administrator's API key. test/node/swagger-ui.test.ts opens it in Chromium.
 */
import { describe, expect, it } from "vitest";
import { OPENAPI_PATH } from "../src/app/app";
import { call } from "./helpers";

describe("Swagger UI", () => {
  for (const path of ["/swagger", "/swagger/"]) {
    it(`answers the page at ${path}, loading only this service's own files`, async () => {
      const page = await call("GET", path);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
      // No absolute URL anywhere: nothing from another origin.
      expect(page.text).not.toMatch(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}/i);
      const loaded = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
      expect(loaded.length).toBe(3);
      for (const url of loaded) {
        expect(url.startsWith("/swagger/")).toBe(true);
        const asset = await call("GET", url);
        expect(asset.status, url).toBe(200);
        expect(asset.headers.get("content-type"), url).toMatch(
          url.endsWith(".css") ? /^text\/css/ : /^text\/javascript/,
        );
        expect(asset.text.length, url).toBeGreaterThan(url.includes("initializer") ? 50 : 100_000);
      }
      const initializer = await call("GET", loaded.find((u) => u.includes("initializer")) as string);
      expect(initializer.text).toContain(JSON.stringify(OPENAPI_PATH));
      expect((await call("GET", OPENAPI_PATH)).status).toBe(200);
    });
  }
});
