/**
 * The Worker's global types (as `wrangler types` makes them): the bindings of wrangler.toml and what the test pool adds.
 * A declaration file that nothing imports, so no import circle closes through it.
 */
import type { D1Migration } from "cloudflare:test";
import type { LicenseSeats } from "./licensing/seat-object";
import type { RateLimiter } from "./durable/rate-limiter";

declare global {
  /**
   * The Worker's bindings (wrangler.toml) plus its string variables. Settings arrive as `Section__Name` variables
   * (CONTRACT section 1) and are read through `kernel/config.ts`, never directly.
   */
  interface Bindings {
    DB: D1Database;
    ARTIFACTS?: R2Bucket;
    RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
    LICENSE_SEATS: DurableObjectNamespace<LicenseSeats>;
    WEBHOOKS: Queue<unknown>;
    /** License traces on their way to D1, written in batches by the consumer (licensing/traces.ts). */
    TRACES: Queue<unknown>;
    /** Producer of the webhook dead-letter queue: deliveries that exhausted their retries (webhooks/deliver.ts). */
    WEBHOOKS_DLQ?: Queue<unknown>;
    EMAIL?: SendEmail;
    /** The admin console's files (wrangler.toml `[assets]`, built into console/dist); served at /console/. */
    ASSETS?: Fetcher;
    /** The deployed version's id, tag and upload time (wrangler `[version_metadata]`); `GET /v1/info` reports it. */
    CF_VERSION_METADATA?: WorkerVersionMetadata;
    /** Only in tests: the migrations vitest.config.ts read. */
    TEST_MIGRATIONS?: D1Migration[];
    /** Only in tests: a local send_email binding that email tests hand to the Worker as EMAIL. */
    TEST_EMAIL?: SendEmail;
    [variable: string]: unknown;
  }

  namespace Cloudflare {
    interface Env extends Bindings {
      TEST_MIGRATIONS: D1Migration[];
    }
    interface GlobalProps {
      mainModule: typeof import("./index");
      durableNamespaces: "RateLimiter" | "LicenseSeats";
    }
  }
}
