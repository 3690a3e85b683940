/**
 * A release's `audience` as a rule of the release (CONTRACT section 8): an expression in the list filter language
 * (http/filter.ts) over the license's fields, compiled by the same compiler with the same whitelist and limits as
 * `GET /v1/licenses?filter=` (the License entity's query schema: write-only and masked fields are unknown names).
 * Saving a release compiles it (checkAudience: 400 naming `audience` with the filter language's own message); the
 * poll side matches a caller's license against the compiled condition (delivery/audience.ts).
 */
import type { SQL } from "drizzle-orm";
import { SQLiteSyncDialect } from "drizzle-orm/sqlite-core";
import { ApiError } from "../kernel/errors";
import { compileFilter } from "../http/filter";
import { License } from "../licensing/license-records";
import { memo } from "../kernel/memo";

const compiledAudiences = memo<string, { condition: SQL; params: number }>("audiences", {
  key: "a release's audience text",
  max: 256,
});
const dialect = new SQLiteSyncDialect();

/** The audience as an SQL condition over `licenses` (throws the filter language's errors). */
export function audienceCondition(audience: string): { condition: SQL; params: number } {
  let known = compiledAudiences.get(audience);
  if (!known) {
    const condition = compileFilter(License.query, audience);
    known = compiledAudiences.keep(audience, {
      condition,
      params: dialect.sqlToQuery(condition).params.length,
    });
  }
  return known;
}

/** Refuses an audience the filter language does not accept: 400 naming `audience`, with the language's message. */
export function checkAudience(audience: string): void {
  try {
    audienceCondition(audience);
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    throw new ApiError(400, `audience: ${e.message}`);
  }
}
