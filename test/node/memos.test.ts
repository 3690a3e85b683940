/**
 * Per-isolate state has one home (src/kernel/memo.ts; docs/architecture.md, "Per-isolate memos"): a module that keeps
 * something between requests declares it there (memo, weakMemo, forgettable), so the registry lists it and
 * `forgetAll` forgets it. This scan of the service's source fails on module-level state declared any other way: a
 * `let`, or a Map/Set/WeakMap whose name is not a constant's. What remains below is reviewed, each with its reason.
 * Runs in Node: it reads the source files.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root } from "../../scripts/local-worker.mjs";

/** Module-level state that is not a memo, by file and name, with the reason. */
const REVIEWED: { file: string; name: string; reason: string }[] = [
  { file: "src/licensing/license-lookup.ts", name: "reasonOfMessage", reason: "a constant table, built at import" },
  { file: "src/http/entity.ts", name: "declared", reason: "the entities declared at import: a table, never stale" },
  { file: "src/http/entity.ts", name: "namedEnums", reason: "enumerations declared at import: a table" },
  {
    file: "src/app/app.ts",
    name: "documents",
    reason: "the OpenAPI document, built once from the routes: never stale",
  },
  { file: "src/routes/rpc/router.ts", name: "handlers", reason: "the gRPC handlers, built once from the services" },
  { file: "src/updates/download-counts.ts", name: "gathering", reason: "a batch of counts in flight, not a cache" },
  { file: "src/licensing/traces.ts", name: "gathering", reason: "a batch of traces in flight, not a cache" },
  {
    file: "src/updates/adoption.ts",
    name: "gathering",
    reason: "a batch of adoption sightings in flight, not a cache",
  },
  {
    file: "src/delivery/answer-memo.ts",
    name: "keptBytes",
    reason: "the answers memo's byte count (its cleared hook)",
  },
  {
    file: "src/licensing/reactions.ts",
    name: "wired",
    reason: "the reactions app/app.ts wires once when it assembles the app: a table, never stale",
  },
  { file: "src/kernel/config.ts", name: "cached", reason: "declared with forgettable('settings')" },
  { file: "src/kernel/config.ts", name: "loading", reason: "the settings read in flight; forgettable('settings')" },
  { file: "src/auth/bootstrap.ts", name: "done", reason: "declared with forgettable('admin-bootstrap')" },
  { file: "src/auth/signing-keys.ts", name: "cache", reason: "declared with forgettable('signing-keys')" },
];

const STATE = /^(?:export )?(?:let (\w+)|const ([a-z]\w*)(?::[^=]+)? = new (?:Map|Set|WeakMap|WeakSet)\b)/gm;

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "gen") yield* sources(path);
    } else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) yield path;
  }
}

describe("per-isolate state", () => {
  it("is declared through src/kernel/memo.ts, but for the reviewed module state", () => {
    const found: { file: string; name: string }[] = [];
    for (const path of sources(join(root, "src"))) {
      const file = relative(root, path).replaceAll("\\", "/");
      if (file === "src/kernel/memo.ts") continue;
      for (const match of readFileSync(path, "utf8").matchAll(STATE)) found.push({ file, name: match[1] ?? match[2]! });
    }
    const reviewed = new Set(REVIEWED.map((r) => `${r.file}:${r.name}`));
    expect(found.map((f) => `${f.file}:${f.name}`).filter((f) => !reviewed.has(f))).toEqual([]);
    // A reviewed entry that no longer exists is dropped from the list, so the list stays the truth.
    const present = new Set(found.map((f) => `${f.file}:${f.name}`));
    expect([...reviewed].filter((r) => !present.has(r))).toEqual([]);
  });
});
