/**
 * An isolate's gathering of small records into one queue message: the first record begins it and sends it after
 * `ms` (under the `waitUntil` of the request that began it), or sooner once it holds `maxItems` groups or `maxBytes`
 * of JSON. A request adds its records and answers at once; the queue sees one message where it would have seen one
 * per request. Session pings use it (updates/sessions.ts).
 */

/** Who adds: a request's environment and its waitUntil. */
export interface GatheringContext {
  env: Bindings;
  waitUntil(promise: Promise<unknown>): void;
}

export interface GatheringOptions<T> {
  /** How long a gathering waits for more before it is sent. */
  ms: number;
  /** At most this many groups (one `add` each) in one message. */
  maxItems: number;
  /** Nor more than this many bytes of JSON. */
  maxBytes: number;
  /** Sends what was gathered (one message); failures are logged, never thrown to a request. */
  send(env: Bindings, items: T[]): Promise<unknown>;
  /** What is gathered, for the log (`sessions`). */
  what: string;
}

interface Batch<T> {
  items: T[];
  groups: number;
  bytes: number;
  sent: boolean;
}

/** A gathering of `T`s: `add(ctx, records)` joins the isolate's current batch. */
export function gathering<T>(options: GatheringOptions<T>) {
  let current: Batch<T> | undefined;
  const flush = (env: Bindings, batch: Batch<T>): Promise<void> => {
    if (batch.sent) return Promise.resolve();
    batch.sent = true;
    if (current === batch) current = undefined;
    return options.send(env, batch.items).then(
      () => undefined,
      (e: unknown) => console.error(`${batch.items.length} ${options.what} not queued`, e),
    );
  };
  return {
    /** Adds one group of records (a request's) to the isolate's batch. */
    add(ctx: GatheringContext, records: T[]): void {
      const bytes = JSON.stringify(records).length;
      if (current && current.bytes + bytes > options.maxBytes) ctx.waitUntil(flush(ctx.env, current));
      if (!current) {
        const batch: Batch<T> = { items: [], groups: 0, bytes: 0, sent: false };
        current = batch;
        ctx.waitUntil(new Promise((resolve) => setTimeout(resolve, options.ms)).then(() => flush(ctx.env, batch)));
      }
      current.items.push(...records);
      current.groups++;
      current.bytes += bytes;
      if (current.groups >= options.maxItems) ctx.waitUntil(flush(ctx.env, current));
    },
  };
}
