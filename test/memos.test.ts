/**
 * Per-isolate memos have one home (src/kernel/memo.ts): with the Worker loaded, its registry lists every memo
 * docs/architecture.md lists ("Per-isolate memos"), and forgetting by topic forgets the memos of that topic only.
 */
import "../src/index";
import { describe, expect, it } from "vitest";
import { forgetAll, memo, memos } from "../src/kernel/memo";

/** The memos of docs/architecture.md, "Per-isolate memos". */
const DOCUMENTED = [
  "admin-bootstrap",
  "adoption-seen",
  "answers",
  "api-keys",
  "audience-checks",
  "audiences",
  "check-ins-gathered",
  "cohort-buckets",
  "console-last-use",
  "db-clients",
  "derived-keys",
  "feed-yaml",
  "fronts",
  "gateway-keys",
  "ip-lists",
  "jws-headers",
  "jwt-keys",
  "parsed-ips",
  "products",
  "proven-integrity",
  "release-lists",
  "settings",
  "short-digests",
  "signing-key-reports",
  "signing-keys",
  "stripe-sdk",
  "unsafe-verdicts",
  "verified-tokens",
];

describe("per-isolate memos", () => {
  it("are all declared through src/kernel/memo.ts, as docs/architecture.md lists them", () => {
    expect(
      memos()
        .map((m) => m.name)
        .sort(),
    ).toEqual(DOCUMENTED);
    for (const m of memos()) {
      expect(m.key, m.name).not.toBe("");
      expect(m.bound, m.name).not.toBe("");
      expect(m.lifetime, m.name).not.toBe("");
    }
  });

  it("keep their bound, and forget by topic or all at once", () => {
    const oldest = memo<string, number>("test-oldest", { key: "test", max: 2, forgetOn: ["releases"] });
    const all = memo<string, number>("test-all", { key: "test", max: 2, evict: "all", forgetOn: ["keys"] });
    for (const [i, key] of ["a", "b", "c"].entries()) {
      oldest.keep(key, i);
      all.keep(key, i);
    }
    expect([...oldest.keys()]).toEqual(["b", "c"]);
    expect([...all.keys()]).toEqual(["c"]);
    forgetAll("releases");
    expect(oldest.size).toBe(0);
    expect(all.size).toBe(1);
    forgetAll();
    expect(all.size).toBe(0);
    expect(() => memo("test-all", { key: "test", max: 1 })).toThrow(/declared twice/);
  });
});
