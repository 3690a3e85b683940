export interface Job {
  kind: string;
  [field: string]: unknown;
}

export type JobHandler = (message: Message<Job>, env: Bindings, ctx: ExecutionContext) => Promise<void>;

/** A handler of all messages of its kind in a queue batch at once (to write them in one D1 round trip). */
export type JobBatchHandler = (messages: Message<Job>[], env: Bindings, ctx: ExecutionContext) => Promise<void>;

const handlers = new Map<string, JobHandler>();
const batchHandlers = new Map<string, JobBatchHandler>();

/** Registers the handler of a job kind (module scope of the owning module). */
export function handleJobs(kind: string, handler: JobHandler): void {
  handlers.set(kind, handler);
}

/**
 * Registers the handler of a job kind that takes every message of that kind in a batch together; it acks them, and
 * when it throws they are all retried.
 */
export function handleJobBatches(kind: string, handler: JobBatchHandler): void {
  batchHandlers.set(kind, handler);
}

function isJob(body: unknown): body is Job {
  return typeof body === "object" && body !== null && typeof (body as Job).kind === "string";
}

export async function consumeBatch(batch: MessageBatch<unknown>, env: Bindings, ctx: ExecutionContext): Promise<void> {
  const grouped = new Map<string, Message<Job>[]>();
  for (const message of batch.messages) {
    const body = message.body;
    if (isJob(body) && batchHandlers.has(body.kind)) {
      const list = grouped.get(body.kind) ?? [];
      list.push(message as Message<Job>);
      grouped.set(body.kind, list);
      continue;
    }
    const handler = isJob(body) ? handlers.get(body.kind) : undefined;
    if (!handler) {
      console.error(`queue ${batch.queue}: no handler for message ${message.id}`, JSON.stringify(body).slice(0, 200));
      message.ack();
      continue;
    }
    try {
      await handler(message as Message<Job>, env, ctx);
    } catch (e) {
      console.error(`queue ${batch.queue}: job ${message.id} failed`, e);
      message.retry();
    }
  }
  for (const [kind, messages] of grouped) {
    try {
      await batchHandlers.get(kind)!(messages, env, ctx);
    } catch (e) {
      console.error(`queue ${batch.queue}: ${messages.length} ${kind} jobs failed`, e);
      for (const message of messages) message.retry();
    }
  }
}
