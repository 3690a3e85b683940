/**
 * Sending mail, free of HTTP (CONTRACT section 3 "/v1/email"): through the `EMAIL` send_email binding when it is
 * bound, otherwise into the `email_outbox` table as `queued`. Either way the message gets an outbox row, so the
 * outbox is also the record of what the service sent (`sent` with its time). A sent message's record keeps no secret
 * it carried (a license's user key, a sign-in link's token: `secrets`), each replaced by a mark: the record is for
 * seeing what went out, and a license email is made again from the license to resend it. A queued message is the
 * delivery itself (no binding sends it), so it keeps its text until it is sent or pruned.
 */
import { EmailMessage } from "cloudflare:email";
import { lt } from "drizzle-orm";
import { clock } from "../kernel/clock";
import { type Config, ConfigError } from "../kernel/config";
import type { Db } from "../db/client";
import { emailOutbox } from "../db/schema";
import { ApiError } from "../kernel/errors";
import { buildMime } from "./mime";

/** A message to send: one recipient, a subject, a text or HTML body. */
export interface OutgoingMail {
  to: string;
  subject: string;
  body: string;
  isHtml: boolean;
  /** Texts of the body that are secrets (user keys, sign-in tokens): never kept in the record of a sent message. */
  secrets?: readonly string[];
}

/** What stands in a sent message's record for each secret it carried. */
export const REDACTED = "[not kept]";

/** What became of a message: sent through the binding, or queued in the outbox; `emailId` is its outbox row. */
export type MailOutcome =
  | { status: "sent"; emailId: number; messageId: string }
  | { status: "queued"; emailId: number };

/** What sending needs: the database (outbox), the configuration (Email:From) and the binding, if any. */
export interface MailDeps {
  db: Db;
  config: Config;
  /** The send_email binding, when the Worker has one. */
  transport: SendEmail | undefined;
}

async function record(db: Db, mail: OutgoingMail, status: "sent" | "queued", at: string): Promise<number> {
  const { secrets = [], ...kept } = mail;
  const body =
    status === "sent"
      ? secrets.filter((s) => s.length > 0).reduce((text, secret) => text.replaceAll(secret, REDACTED), kept.body)
      : kept.body;
  const [row] = await db
    .insert(emailOutbox)
    .values({ ...kept, body, status, createdAt: at, sentAt: status === "sent" ? at : null })
    .returning({ id: emailOutbox.id });
  if (!row) throw new Error("email_outbox insert returned no row");
  return row.id;
}

/** Hands the message to the binding as raw MIME; the binding's refusal becomes a 500 naming its reason. */
async function transmit(transport: SendEmail, from: string, mail: OutgoingMail, date: Date): Promise<string> {
  const messageId = `${crypto.randomUUID()}@${from.split("@")[1] ?? "localhost"}`;
  const raw = buildMime({ from, ...mail }, { date, messageId });
  try {
    const result = await transport.send(new EmailMessage(from, mail.to, raw));
    return result?.messageId ?? messageId;
  } catch (e) {
    throw new ApiError(500, `The email to ${mail.to} could not be sent: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Sends `mail` now through the binding, or queues it in the outbox when no binding is bound. */
export async function sendMail(deps: MailDeps, mail: OutgoingMail): Promise<MailOutcome> {
  const now = clock.now();
  if (!deps.transport) return { status: "queued", emailId: await record(deps.db, mail, "queued", now.toISOString()) };
  const from = deps.config["Email:From"];
  if (!from) throw new ConfigError("Email:From", "a sender address is required to send through the EMAIL binding");
  const messageId = await transmit(deps.transport, from, mail, now);
  return { status: "sent", emailId: await record(deps.db, mail, "sent", now.toISOString()), messageId };
}

/** The cron trigger's statement removing outbox messages older than Email:OutboxRetentionDays (app/housekeeping.ts). */
export function pruneOutbox(db: Db, config: Config, now: Date) {
  const cutoff = new Date(now.getTime() - config["Email:OutboxRetentionDays"] * 86_400_000).toISOString();
  return db.delete(emailOutbox).where(lt(emailOutbox.createdAt, cutoff));
}
