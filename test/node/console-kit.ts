/**
 * What the console's browser tests share (console.test.ts, console-owner.test.ts, console-release.test.ts): the
 * README's pictures and a list's filter expression box.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Locator, Page } from "playwright-core";
import { expect } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark and the scripts
import { root } from "../../scripts/local-worker.mjs";

/**
 * A picture the README shows, of the whole page: refreshed in docs/ with UPDATE_SCREENSHOTS=1 (so a plain test run
 * leaves the tree clean), else written to a temporary directory.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  const file =
    process.env["UPDATE_SCREENSHOTS"] === "1"
      ? join(root as string, "docs", name)
      : join(mkdtempSync(join(tmpdir(), "console-shot-")), name);
  await page.screenshot({ path: file, fullPage: true });
  expect(readFileSync(file).subarray(1, 4).toString()).toBe("PNG");
}

/** A list's filter expression box: under "Filter expression" when the list has simple fields (filters.tsx). */
export async function expressionBox(list: Locator): Promise<Locator> {
  // The list's filter form first (a page just opened may not have drawn it yet), then its advanced part.
  await list.getByRole("button", { name: "Apply" }).first().waitFor();
  const details = list.locator("details.advanced");
  if ((await details.count()) === 1 && (await details.getAttribute("open")) === null)
    await details.locator("summary").click();
  return list.getByLabel("Filter", { exact: true });
}
