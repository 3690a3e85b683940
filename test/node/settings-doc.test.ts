/**
 * The settings reference is generated (issue 35): docs/settings.md is what `npm run docs:settings`
 * (scripts/settings-doc.mjs) writes from the settings' own definitions in src/kernel/settings.ts, so a setting added,
 * renamed, re-described or given another default without regenerating the page fails here.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module
import { root } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module
import { formatDuration, SETTINGS_PAGE, settingsDoc } from "../../scripts/settings-doc.mjs";
import { settingDefinitions } from "../../src/kernel/settings";

describe("docs/settings.md", () => {
  it("is what npm run docs:settings generates from src/kernel/settings.ts", () => {
    const written = readFileSync(join(root, SETTINGS_PAGE), "utf8");
    expect(written, "docs/settings.md is out of date: run npm run docs:settings").toBe(settingsDoc());
  });

  it("lists every setting once, and no secret's value", () => {
    const text = settingsDoc() as string;
    for (const [name, definition] of Object.entries(settingDefinitions)) {
      const rows = text.split("\n").filter((line) => line.startsWith(`| \`${name}\` |`));
      expect(rows, name).toHaveLength(1);
      if (definition.secret) expect(rows[0]!.split(" | ")[1], name).toBe("— (secret)");
    }
  });

  it("writes durations as the settings take them", () => {
    expect(formatDuration(180_000)).toBe("00:03:00");
    expect(formatDuration(28_800_000)).toBe("08:00:00");
    expect(formatDuration(7 * 86_400_000)).toBe("7.00:00:00");
    expect(formatDuration(90_061_500)).toBe("1.01:01:01.500");
  });
});
