/**
 * Resource passwords at rest (issue 14): encrypted with Application:EncryptionKey when written (the CRUD hooks of
 * resources.ts), and the ones stored in plain text before that encrypted in place by the cron trigger.
 */
import { encryptSecret } from "../secrets";
import type { Config } from "../config";
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
export async function sealPlainPasswords(d1: D1Database, config: Config): Promise<number> {
  const secret = config["Application:EncryptionKey"];
  if (!secret) return 0;
  const { results } = await d1
    .prepare("SELECT id, password FROM resources WHERE password IS NOT NULL AND password NOT LIKE 'v1:%' LIMIT ?")
    .bind(SEAL_PER_RUN)
    .all<{ id: number; password: string }>();
  const updates: D1PreparedStatement[] = [];
  for (const row of results) {
    updates.push(
      d1
        .prepare("UPDATE resources SET password = ? WHERE id = ? AND password = ?")
        .bind(await encryptSecret(secret, row.password), row.id, row.password),
    );
  }
  const [first, ...rest] = updates;
  if (!first) return 0;
  const done = await d1.batch([first, ...rest]);
  return done.reduce((n, r) => n + (r.meta.changes ?? 0), 0);
}
