/**
 * Every operation of the OpenAPI document can be found in the source by its operationId (issue 35): each route is
 * declared as a top-level `createRoute` constant with its operationId written out, and a CRUD resource lists its
 * operationIds where it is declared (routes/crud.ts refuses one that does not). A generated or computed id would
 * leave a reader of the document nothing to search for.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith(".ts") ? [path] : [];
  });
}

let worker: { url: URL; dispose(): Promise<void> };
let document: { paths: Record<string, Record<string, { operationId?: string }>> };

beforeAll(async () => {
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "operation-ids-secret-0123456789abcdef",
      Application__EncryptionKey: "operation-ids",
    },
  });
  document = await (await fetch(new URL("/swagger/v1/swagger.json", worker.url))).json();
});
afterAll(() => worker?.dispose());

describe("operationIds", () => {
  it("are each written out in the source of src/routes/", () => {
    const source = sources(join(root, "src", "routes"))
      .map((path) => readFileSync(path, "utf8"))
      .join("\n");
    const ids = Object.values(document.paths).flatMap((ops) => Object.values(ops).map((op) => op.operationId));
    expect(ids.length).toBeGreaterThan(100);
    const missing = ids.filter((id) => !id || !source.includes(`"${id}"`));
    expect(missing).toEqual([]);
  });
});
