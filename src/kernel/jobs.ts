/**
 * The queue's jobs: each message names its kind, and index.ts states one handler per kind in a table typed by
 * `JobHandlers`, so a kind without a handler is a type error rather than messages acknowledged unread. A handler
 * decides per message whether to ack or retry; a message of a kind the table does not know (a stray, or one from an
 * older deployment) is logged and acknowledged, so it never loops until the dead-letter queue.
 */

/** Every job kind and what its message carries besides `kind`. */
export interface Jobs {
  /** One delivery event row to deliver (webhooks/deliver.ts). */
  "webhook.delivery": { eventId: string; subscriptionId: number };
  /** Floating seats a LicenseSeats alarm reclaimed and wrote through to D1 (licensing/license-events.ts emits the events). */
  "license.seats.expired": { licenseRowId: number; seats: { machineId: string; clientId: string }[] };
  /**
   * License traces to write, and licenses' check-ins `[license row id, ISO time]`, many messages in one D1 batch
   * (licensing/traces.ts).
   */
  "license.traces": { traces: unknown[]; checkIns?: [number, string][] };
  /** Completed downloads per artifact, `[artifact id, count]`, added up in one D1 batch (updates/download-counts.ts). */
  "release.downloads.counted": { counts: [number, number][] };
  /** Release adoption sightings, `[productId, version, stage, day, platform, install]`, written in one D1 batch (updates/adoption.ts). */
  "release.adoption": { sightings: [number, string, number, string, string, string][] };
  /**
   * Release health session pings, `[productId, version, platform, install, sessionId, status, startedAt, durationMs,
   * address, licensed]` (the pings an isolate gathered), written one conditional statement a message, all in one D1
   * batch (updates/sessions.ts).
   */
  "release.sessions": { sessions: unknown[][] };
  /** A chunk of a large import's rows, waiting in R2, to write (imports/import-service.ts). */
  "import.chunk": { importId: string; chunk: number };
}

export type JobKind = keyof Jobs;

/** A message body of one kind, as producers send it. */
export type JobOf<K extends JobKind> = { kind: K } & Jobs[K];

/** A message body as the consumer receives it: not trusted until its handler has checked it. */
export interface Job {
  kind: string;
  [field: string]: unknown;
}

export type JobHandler = (message: Message<Job>, env: Bindings, ctx: ExecutionContext) => Promise<void>;

/** A handler of all messages of its kind in a queue batch at once (to write them in one D1 round trip). */
export type JobBatchHandler = (messages: Message<Job>[], env: Bindings, ctx: ExecutionContext) => Promise<void>;

/**
 * The handler of one kind: of each message, or `{ batch }` of all its messages in a queue batch together (it acks
 * them; when it throws they are all retried).
 */
export type JobHandlerEntry = JobHandler | { batch: JobBatchHandler };

/** One handler per job kind, no more, no less. */
export type JobHandlers = Record<JobKind, JobHandlerEntry>;

function isJob(body: unknown): body is Job {
  return typeof body === "object" && body !== null && typeof (body as Job).kind === "string";
}

/** Hands each message of a batch to its kind's handler; retries a message whose handler throws. */
export async function consumeBatch(
  batch: MessageBatch<unknown>,
  env: Bindings,
  ctx: ExecutionContext,
  handlers: Readonly<Record<string, JobHandlerEntry>>,
): Promise<void> {
  const grouped = new Map<JobBatchHandler, Message<Job>[]>();
  for (const message of batch.messages) {
    const body = message.body;
    const entry = isJob(body) && Object.hasOwn(handlers, body.kind) ? handlers[body.kind] : undefined;
    if (!entry) {
      console.error(`queue ${batch.queue}: no handler for message ${message.id}`, JSON.stringify(body).slice(0, 200));
      message.ack();
      continue;
    }
    if (typeof entry !== "function") {
      grouped.set(entry.batch, [...(grouped.get(entry.batch) ?? []), message as Message<Job>]);
      continue;
    }
    try {
      await entry(message as Message<Job>, env, ctx);
    } catch (e) {
      console.error(`queue ${batch.queue}: job ${message.id} failed`, e);
      message.retry();
    }
  }
  for (const [handler, messages] of grouped) {
    try {
      await handler(messages, env, ctx);
    } catch (e) {
      console.error(`queue ${batch.queue}: ${messages.length} batched jobs failed`, e);
      for (const message of messages) message.retry();
    }
  }
}
