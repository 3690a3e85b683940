/**
 * The email outbox as a record (issue 37, "mail and first steps"), free of HTTP: every message the service made, as
 * `email_outbox` keeps it (mail/send.ts). Without the EMAIL binding (development) a message is only here, `queued`,
 * with its whole text: the license email's user key, the portal's sign-in link. With the binding it is `sent`, and
 * its record keeps no secret it carried (each replaced by `[not kept]`).
 *
 * Resending puts a kept message through the mail path again as a new message (a new outbox row): queued again
 * without the binding, sent with it. A record whose secrets were not kept cannot be sent again (its text is no
 * longer the message): the license email is made again from the license instead. A queued message sent through the
 * binding keeps no body in its new record, since the outbox cannot tell which of its text was a secret.
 */
import { eq } from "drizzle-orm";
import { emailOutbox } from "../db/schema";
import { defineEntity, f } from "../http/entity";
import { ApiError, notFound400 } from "../kernel/errors";
import { type MailDeps, type MailOutcome, REDACTED, sendMail } from "./send";

/** The statuses of an outbox message: `queued` (kept for delivery; no binding), `sent` (through the binding). */
export const EMAIL_STATUSES = ["queued", "sent"] as const;

/** An outbox message as the list returns it (read-only: the service writes the outbox). */
export const OutboxEmail = defineEntity({
  name: "OutboxEmail",
  singular: "email",
  plural: "emails",
  table: emailOutbox,
  fields: {
    id: f.id(),
    to: f.string({ readOnly: true, description: "The recipient's address." }),
    subject: f.string({ readOnly: true }),
    body: f.string({
      readOnly: true,
      description: `The text or HTML body. A sent message's record has each secret it carried (a user key, a sign-in link's token) replaced by \`${REDACTED}\`.`,
    }),
    isHtml: f.bool({ readOnly: true }),
    status: f.oneOf(EMAIL_STATUSES, {
      readOnly: true,
      description: "`queued`: kept in the outbox (no EMAIL binding); `sent`: handed to the EMAIL binding.",
    }),
    createdAt: f.date({ readOnly: true }),
    sentAt: f.date({ readOnly: true }),
  },
});

/** Sends outbox message `emailId` again as a new message; 400 when it is unknown or its secrets were not kept. */
export async function resendEmail(deps: MailDeps, emailId: number): Promise<MailOutcome> {
  const row = await deps.db.select().from(emailOutbox).where(eq(emailOutbox.id, emailId)).get();
  if (!row) throw notFound400("Email", emailId);
  if (row.status === "sent" && row.body.includes(REDACTED))
    throw new ApiError(
      400,
      `Email ${emailId} was sent and its secrets were not kept, so it cannot be sent again as it was; for a license's email, send it again from the license (POST /v1/email/license)`,
    );
  return sendMail(deps, {
    to: row.to,
    subject: row.subject,
    body: row.body,
    isHtml: row.isHtml,
    // A queued message's text may hold secrets the outbox cannot name: sent, its record keeps none of it.
    secrets: row.status === "queued" ? [row.body] : [],
  });
}
