/**
 * Resource passwords at rest (issue 14): encrypted with Application:EncryptionKey when written (the CRUD hooks of
 * resources.ts), and the ones stored in plain text before that encrypted in place by the cron trigger.
 */
import { and, eq, isNotNull, notLike } from "drizzle-orm";
import { encryptSecret } from "../kernel/secrets";
import type { Config } from "../kernel/config";
import type { Db } from "../db/client";
import { resources } from "../db/schema";
import type { Row } from "../http/repository";
import type { ServiceContext } from "../http/context";

/** Encrypts a password being written (null clears it). */
export async function sealPassword(ctx: ServiceContext, values: Row): Promise<Row> {
  if (typeof values["password"] !== "string") return values;
  return { ...values, password: await encryptSecret(ctx.config["Application:EncryptionKey"], values["password"]) };
}

/** Resources whose password is sealed per cron run (sealPlainPasswords). */
const SEAL_PER_RUN = 100;

/**
 * Encrypts resource passwords stored in plain text before they were encrypted (the cron trigger); returns how many
 * it sealed. Without an EncryptionKey, none.
 */
export async function sealPlainPasswords(db: Db, config: Config): Promise<number> {
  const secret = config["Application:EncryptionKey"];
  if (!secret) return 0;
  const results = await db
    .select({ id: resources.id, password: resources.password })
    .from(resources)
    .where(and(isNotNull(resources.password), notLike(resources.password, "v1:%")))
    .limit(SEAL_PER_RUN);
  const updates = [];
  for (const row of results) {
    if (row.password === null) continue;
    // Only if unchanged since read: a write through the API meanwhile stored a sealed password already.
    updates.push(
      db
        .update(resources)
        .set({ password: await encryptSecret(secret, row.password) })
        .where(and(eq(resources.id, row.id), eq(resources.password, row.password))),
    );
  }
  const [first, ...rest] = updates;
  if (!first) return 0;
  const done = await db.batch([first, ...rest]);
  return done.reduce((n, r) => n + (r.meta.changes ?? 0), 0);
}
