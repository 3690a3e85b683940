/**
 * A release's `audience` (CONTRACT section 8): an expression in the list filter language (http/filter.ts) over the
 * license's fields, compiled by updates/audience.ts (the rule of the release's field: the same compiler, whitelist and
 * limits as `GET /v1/licenses?filter=`). A caller's license is matched in
 * D1, in the statement that reads it or one beside it (audienceReads): the SQL that lists licenses is the one rule.
 */
import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { type Params, batchReads, compiled } from "../db/compiled";
import { licenses } from "../db/schema";
import { MAX_FILTER_PARAMETERS } from "../http/filter";
import { type TypedKey, userKeyIs } from "../licensing/user-key";
import { callerRead } from "./caller";
import { memo } from "../kernel/memo";
import { audienceCondition } from "../updates/audience";

/** What audienceReads needs of a release. */
export interface WithAudience {
  id: number;
  audience: string | null;
  halted?: boolean;
}

/** Which license an audience read looks at: the one with a user key (compact form), or by its integer key. */
export type AudienceLicense = { key: TypedKey } | { id: number };

/**
 * The audience reads of a chunk of audiences: the caller's row, read as the license read of an update route reads it
 * (caller.ts callerRead: by user key, or by id for a feed token), with the audiences' verdicts as one more column, a
 * JSON array of 0 and 1. So the first of them is the license read itself, and a licensed poll of a release with an
 * audience sends one statement, not two.
 */
function describeChecks(chunk: readonly string[]) {
  const matched = sql<string>`json_array(${sql.join(
    chunk.map((text) => sql`CASE WHEN ${audienceCondition(text).condition} THEN 1 ELSE 0 END`),
    sql`, `,
  )})`.as("audience_matched");
  return {
    byKey: compiled((db, p: Params<{ productId: number; key: string; legacy: string }>) =>
      callerRead(db, p.productId, userKeyIs(p.key, p.legacy), { matched }),
    ),
    byId: compiled((db, p: Params<{ productId: number; id: number }>) =>
      callerRead(db, p.productId, eq(licenses.id, p.id), { matched }),
    ),
  };
}

/** The audience reads, described once per isolate (db/compiled.ts: a poll binds its values to SQL made the first time). */
const audienceChecks = memo<string, ReturnType<typeof describeChecks>>("audience-checks", {
  key: "a chunk of release audiences (their texts, in order)",
  max: 256,
});

function checksOf(chunk: readonly string[]) {
  const key = chunk.join("\u0000");
  return audienceChecks.get(key) ?? audienceChecks.keep(key, describeChecks(chunk));
}

/**
 * The reads that tell which of `releases`' audiences the license `which` matches, unexecuted (a route sends them in
 * the batch of its other reads), and how to read their rows. Each read is also the caller's license read for the
 * product `productId` (callerRead), so a route sends the first in place of its license read. No read when no visible
 * release has an audience; one statement per ~90 bound values (D1 binds at most 100 per statement).
 */
export function audienceReads(which: AudienceLicense, releases: readonly WithAudience[], productId = 0) {
  const texts = [...new Set(releases.filter((r) => r.audience && !r.halted).map((r) => r.audience as string))];
  const chunks: string[][] = [];
  let size = MAX_FILTER_PARAMETERS;
  for (const text of texts) {
    const { params } = audienceCondition(text);
    if (size + params > MAX_FILTER_PARAMETERS) chunks.push([]);
    chunks.at(-1)!.push(text);
    size = chunks.at(-1)!.length === 1 ? params : size + params;
  }
  const queries = chunks.map((chunk) => {
    const checks = checksOf(chunk);
    return "key" in which
      ? checks.byKey.with({ productId, key: which.key.compact, legacy: which.key.legacy })
      : checks.byId.with({ productId, id: which.id });
  });
  /** The ids of the releases whose audience matched, from the rows of `queries` (in their order). */
  const matched = (rows: readonly (readonly { matched: string }[])[]): Set<number> => {
    const yes = new Set<string>();
    chunks.forEach((chunk, i) => {
      const flags = JSON.parse(rows[i]?.[0]?.matched ?? "[]") as number[];
      chunk.forEach((text, j) => {
        if (flags[j] === 1) yes.add(text);
      });
    });
    return new Set(releases.filter((r) => r.audience && yes.has(r.audience)).map((r) => r.id));
  };
  return { queries, matched };
}

/** Which releases' audiences the license `licenseId` (integer key) matches: one statement (or none). */
export async function matchedAudiences(db: Db, licenseId: number, releases: readonly WithAudience[]) {
  const { queries, matched } = audienceReads({ id: licenseId }, releases);
  const [first, ...rest] = queries;
  if (!first) return new Set<number>();
  return matched(await batchReads(db, [first, ...rest]));
}
