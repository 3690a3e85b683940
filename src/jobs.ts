/**
 * The queue consumer: each message names its job kind, and the module that owns the kind handles it (webhook
 * delivery registers `webhook.delivery`). A handler decides per message whether to ack or retry; a message of a
 * kind nobody handles is logged and acknowledged, so a stray message never loops until the dead-letter queue.
 */
import type { Bindings } from "./env";

export interface Job {
  kind: string;
  [field: string]: unknown;
}

export type JobHandler = (message: Message<Job>, env: Bindings, ctx: ExecutionContext) => Promise<void>;

const handlers = new Map<string, JobHandler>();

/** Registers the handler of a job kind (module scope of the owning module). */
export function handleJobs(kind: string, handler: JobHandler): void {
  handlers.set(kind, handler);
}

function isJob(body: unknown): body is Job {
  return typeof body === "object" && body !== null && typeof (body as Job).kind === "string";
}

export async function consumeBatch(batch: MessageBatch<unknown>, env: Bindings, ctx: ExecutionContext): Promise<void> {
  for (const message of batch.messages) {
    const body = message.body;
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
}
