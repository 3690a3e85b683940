/**
 * Imports (CONTRACT 16), free of HTTP: `POST /v1/imports` reads a source (keygen.ts, csv.ts), refuses rows naming no
 * product of the service, and writes the rest chunk by chunk (import-writes.ts); an import of more than
 * IMPORT_INLINE_ROWS rows is written off the request path: its checked rows wait in R2 as chunks, one queue message
 * each, and the consumer writes a chunk and adds what it came to to the import's record, once a chunk (a chunk
 * delivered again is recognised by its number; its rows, written already, would only be skipped). `GET /v1/imports/{id}` reads the
 * record. A dry run goes the same way and writes nothing but its record.
 */
import { eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { imports } from "../db/schema";
import type { ServiceContext } from "../http/context";
import { clock } from "../kernel/clock";
import { randomString } from "../kernel/crypto";
import { ApiError, ValidationProblem } from "../kernel/errors";
import type { Job, JobOf } from "../kernel/jobs";
import { getDb } from "../db/client";
import { loadConfig } from "../db/settings-store";
import { readCsv } from "./csv";
import { type ChunkOutcome, writeChunk } from "./import-writes";
import { readKeygen } from "./keygen";
import type { ImportProblem, ImportRow, ImportSource, ReadSource } from "./rows";

/** Imports of at most this many rows are written while the request waits. */
export const IMPORT_INLINE_ROWS = 1000;
/** Rows a chunk holds: one queue message, a few statements. */
export const IMPORT_CHUNK_ROWS = 500;
/** Errors an import's record keeps (their count is kept whole). */
export const IMPORT_ERRORS_KEPT = 1000;
/** The queue job of a chunk (kernel/jobs.ts). */
export const IMPORT_CHUNK_JOB = "import.chunk" as const;

export type ImportRecord = typeof imports.$inferSelect;

/** The import as the API answers it (CONTRACT 16's report). */
export function importReport(record: ImportRecord) {
  return {
    id: record.importId,
    source: record.source as ImportSource,
    dryRun: record.dryRun,
    status: record.status as "running" | "done" | "failed",
    total: record.total,
    processed: record.processed,
    created: {
      customers: record.createdCustomers,
      licenses: record.createdLicenses,
      activations: record.createdActivations,
    },
    skipped: record.skipped,
    errorCount: record.errorCount,
    errors: record.errors,
    unsupported: record.unsupported,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

/** The source's rows, the rows it could not read, and what it holds without equivalent. */
function read(source: ImportSource, data: unknown): ReadSource {
  if (source === "keygen") return readKeygen(data);
  if (typeof data !== "string") throw new ValidationProblem({ data: ["A CSV import's data is the CSV text"] });
  return readCsv(data);
}

/** The service's products the rows name, by code; a row naming none is refused with its row. */
async function resolveProducts(db: Db, rows: ImportRow[], errors: ImportProblem[]) {
  const codes = [...new Set(rows.map((r) => r.product))];
  const found = await db.$client
    .prepare("SELECT id, code FROM products WHERE code IN (SELECT value FROM json_each(?1))")
    .bind(JSON.stringify(codes))
    .all<{ id: number; code: string }>();
  const products = new Map(found.results.map((p) => [p.code, p.id]));
  const known: ImportRow[] = [];
  for (const row of rows) {
    if (products.has(row.product)) known.push(row);
    else errors.push({ row: row.row, field: "product", message: `No product has the code '${row.product}'` });
  }
  return { products, known };
}

const byRow = (a: ImportProblem, b: ImportProblem) => a.row - b.row;

/** The figures of written chunks, added up. */
function addUp(outcomes: ChunkOutcome[]): ChunkOutcome {
  return outcomes.reduce<ChunkOutcome>(
    (sum, o) => ({
      created: {
        customers: sum.created.customers + o.created.customers,
        licenses: sum.created.licenses + o.created.licenses,
        activations: sum.created.activations + o.created.activations,
      },
      skipped: sum.skipped + o.skipped,
      errors: [...sum.errors, ...o.errors],
    }),
    { created: { customers: 0, licenses: 0, activations: 0 }, skipped: 0, errors: [] },
  );
}

/**
 * Runs an import: read, checked, and written at once (at most IMPORT_INLINE_ROWS rows) or queued in chunks. Answers
 * the import's record (status `done`, or `running` with its progress to come).
 */
export async function runImport(
  ctx: ServiceContext,
  input: { source: ImportSource; dryRun: boolean; data: unknown },
): Promise<ImportRecord> {
  const { rows, errors, unsupported } = read(input.source, input.data);
  const { products, known } = await resolveProducts(ctx.db, rows, errors);
  const failedRows = new Set(errors.filter((e) => e.row > 0).map((e) => e.row));
  const total = rows.length + [...failedRows].filter((row) => !rows.some((r) => r.row === row)).length;
  const now = clock.now();
  const settings = {
    config: ctx.config,
    products,
    now,
    dryRun: input.dryRun,
  };
  const chunks: ImportRow[][] = [];
  for (let i = 0; i < known.length; i += IMPORT_CHUNK_ROWS) chunks.push(known.slice(i, i + IMPORT_CHUNK_ROWS));
  const queued = known.length > IMPORT_INLINE_ROWS;
  const outcomes: ChunkOutcome[] = [];
  if (!queued) for (const chunk of chunks) outcomes.push(await writeChunk(ctx.db, input.source, chunk, settings));
  const sum = addUp(outcomes);
  const allErrors = [...errors, ...sum.errors].sort(byRow);
  const importId = `imp${randomString(12, "0123456789abcdef")}`;
  const stamp = now.toISOString();
  const [record] = await ctx.db
    .insert(imports)
    .values({
      importId,
      source: input.source,
      dryRun: input.dryRun,
      status: queued ? "running" : "done",
      total,
      // Queued: the rows judged so far are those refused before any chunk.
      processed: queued ? total - known.length : total,
      createdCustomers: sum.created.customers,
      createdLicenses: sum.created.licenses,
      createdActivations: sum.created.activations,
      skipped: sum.skipped,
      errorCount: allErrors.length,
      errors: allErrors.slice(0, IMPORT_ERRORS_KEPT),
      unsupported,
      createdBy: ctx.principal?.userName ?? null,
      createdAt: stamp,
      updatedAt: stamp,
    })
    .returning();
  if (queued) await queueChunks(ctx, importId, chunks);
  ctx.log?.audit(
    "ImportStarted",
    `Import ${importId} from ${input.source}${input.dryRun ? " (dry run)" : ""}: ${total} rows`,
    ctx,
    { importId },
  );
  return record!;
}

/** The R2 bucket a large import's chunks wait in, or 400 saying none is bound. */
function importBucket(env: Bindings): R2Bucket {
  if (!env.ARTIFACTS)
    throw new ApiError(
      400,
      `An import of more than ${IMPORT_INLINE_ROWS} rows waits in the R2 bucket bound as ARTIFACTS, and none is bound: bind one in wrangler.toml, or import in parts`,
    );
  return env.ARTIFACTS;
}

/** Stores each chunk in R2 and queues a message for it (at most 100 a send). */
async function queueChunks(ctx: ServiceContext, importId: string, chunks: ImportRow[][]): Promise<void> {
  const bucket = importBucket(ctx.env);
  await Promise.all(chunks.map((rows, chunk) => bucket.put(chunkKey(importId, chunk), JSON.stringify(rows))));
  const messages = chunks.map((_, chunk) => ({
    body: { kind: IMPORT_CHUNK_JOB, importId, chunk } satisfies JobOf<typeof IMPORT_CHUNK_JOB>,
  }));
  for (let i = 0; i < messages.length; i += 100) await ctx.env.TRACES.sendBatch(messages.slice(i, i + 100));
}

const chunkKey = (importId: string, chunk: number) => `imports/${importId}/${chunk}.json`;

/** The import with this id, or 404. */
export async function requireImport(db: Db, importId: string): Promise<ImportRecord> {
  const record = await db.select().from(imports).where(eq(imports.importId, importId)).get();
  if (!record) throw new ApiError(404, `Import ${importId} not found`);
  return record;
}

/**
 * The consumer of a chunk: writes its rows (import-writes.ts) and adds what they came to to the import's record, the
 * chunk marked done in the same statement, so a chunk delivered again adds nothing; the last chunk ends the import.
 * A chunk whose object is gone was written before (its object is deleted after).
 */
export async function consumeImportChunk(message: Message<Job>, env: Bindings): Promise<void> {
  const { importId, chunk } = message.body as Partial<JobOf<typeof IMPORT_CHUNK_JOB>>;
  if (typeof importId !== "string" || typeof chunk !== "number") {
    console.error(`imports: message ${message.id} names no chunk, skipped`);
    message.ack();
    return;
  }
  const { config } = await loadConfig(env, env.DB);
  const db = getDb(env.DB);
  const record = await db.select().from(imports).where(eq(imports.importId, importId)).get();
  const object = record ? await importBucket(env).get(chunkKey(importId, chunk)) : null;
  if (!record || !object || record.doneChunks.includes(chunk)) {
    message.ack();
    return;
  }
  const rows = (await object.json()) as ImportRow[];
  const { products } = await resolveProducts(db, rows, []);
  const outcome = await writeChunk(db, record.source, rows, {
    config,
    products,
    now: clock.now(),
    dryRun: record.dryRun,
  });
  await addChunk(db, record.id, chunk, rows.length, outcome);
  await importBucket(env).delete(chunkKey(importId, chunk));
  message.ack();
}

/** Adds a chunk's figures to its import, once (the chunk's number joins `doneChunks` in the same statement). */
async function addChunk(db: Db, id: number, chunk: number, rows: number, outcome: ChunkOutcome): Promise<void> {
  await db.$client
    .prepare(
      `UPDATE imports SET processed = processed + ?3, created_customers = created_customers + ?4,
         created_licenses = created_licenses + ?5, created_activations = created_activations + ?6,
         skipped = skipped + ?7, error_count = error_count + ?8,
         errors = (SELECT json_group_array(json(value)) FROM (SELECT value FROM (
           SELECT value, 0 AS part, key FROM json_each(errors) UNION ALL SELECT value, 1, key FROM json_each(?9)
         ) ORDER BY part, key LIMIT ?10)),
         done_chunks = json_insert(done_chunks, '$[#]', ?2),
         status = CASE WHEN processed + ?3 >= total THEN 'done' ELSE status END, updated_at = ?11
       WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM json_each(done_chunks) WHERE value = ?2)`,
    )
    .bind(
      id,
      chunk,
      rows,
      outcome.created.customers,
      outcome.created.licenses,
      outcome.created.activations,
      outcome.skipped,
      outcome.errors.length,
      JSON.stringify(outcome.errors),
      IMPORT_ERRORS_KEPT,
      clock.now().toISOString(),
    )
    .run();
}
