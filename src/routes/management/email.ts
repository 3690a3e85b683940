/**
 * `/v1/email/...` (Administrator, LicenseManager, Sales; SPEC access table "Log, server info, email"): send a
 * message, or a license's email rendered from the `EmailTemplate` resource, or preview that email without sending
 * it. Sent through the EMAIL binding when it is bound (`status: "sent"`), otherwise stored in the outbox
 * (`status: "queued"`); see mail/. The outbox itself (list and resend) is the Administrator's: until a message is
 * sent it holds its secrets (a user key, a sign-in link).
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { Roles, access } from "../../auth/guard";
import { type ServiceContext, serviceContext } from "../../http/context";
import { enveloped, errorResponses, int32, int32PathParam, json, jsonBody } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { licenseMail, previewLicenseMail } from "../../mail/license-mail";
import { OutboxEmail, resendEmail } from "../../mail/outbox";
import { type OutgoingMail, sendMail } from "../../mail/send";
import { crud } from "../crud";

const emailAddress = z.email().max(254).openapi({ format: "email" });

/** The body of `POST /v1/email/send`. */
export const EmailSendBody = z
  .object({
    to: emailAddress,
    subject: z
      .string()
      .min(1)
      .max(998)
      .regex(/^[^\r\n]*$/, "The subject must be one line"),
    body: z.string().max(1_000_000),
    isHtml: z.boolean().optional(),
  })
  .openapi("EmailSend");

/** The body of `POST /v1/email/license`. */
export const EmailLicenseBody = z
  .object({
    licenseId: z
      .union([z.string().min(1).max(64), int32(1)])
      .openapi({ description: "The license's `lic…` id or its integer id." }),
    to: emailAddress.optional().openapi({ description: "Default: the licensee's email, else the customer's." }),
  })
  .openapi("EmailLicense");

/** The answer of both email routes. */
export const EmailOutcome = enveloped({
  status: z
    .enum(["sent", "queued"])
    .openapi({ description: "`sent` through the EMAIL binding, or `queued` in the outbox." }),
  emailId: int32(1).openapi({ description: "The message's row in the email outbox." }),
  messageId: z.string().optional().openapi({ description: "Message-ID given by the mail transport (sent only)." }),
}).openapi("EmailOutcome");

const roles = Roles.management;
const answer = { 200: json(EmailOutcome, "The message was sent or queued"), ...errorResponses };

const deliver = (ctx: ServiceContext, mail: OutgoingMail) =>
  sendMail({ db: ctx.db, config: ctx.config, transport: ctx.env.EMAIL }, mail);

const sendEmailRoute = createRoute({
  method: "post",
  path: "/v1/email/send",
  tags: ["Email"],
  operationId: "sendEmail",
  summary: "Send an email",
  ...access.key(roles),
  request: { body: jsonBody(EmailSendBody) },
  responses: answer,
});

const sendEmail: RouteHandler<typeof sendEmailRoute, AppEnv> = async (c) => {
  const { to, subject, body, isHtml } = c.req.valid("json");
  return ok(c, await deliver(serviceContext(c), { to, subject, body, isHtml: isHtml ?? false }));
};

const sendLicenseEmailRoute = createRoute({
  method: "post",
  path: "/v1/email/license",
  tags: ["Email"],
  operationId: "sendLicenseEmail",
  summary: "Send a license's email, rendered from the EmailTemplate resource",
  ...access.key(roles),
  request: { body: jsonBody(EmailLicenseBody) },
  responses: answer,
});

const sendLicenseEmail: RouteHandler<typeof sendLicenseEmailRoute, AppEnv> = async (c) => {
  const { licenseId, to } = c.req.valid("json");
  const ctx = serviceContext(c);
  return ok(c, await deliver(ctx, await licenseMail(ctx.db, licenseId, to)));
};

/** The body of `POST /v1/email/preview`. */
export const EmailPreviewBody = z
  .object({
    licenseId: z
      .union([z.string().min(1).max(64), int32(1)])
      .optional()
      .openapi({ description: "The license to render (`lic…` id or integer id); default: a sample license." }),
    templateId: int32(1)
      .optional()
      .openapi({ description: "The EmailTemplate resource to render; default: the one sending would pick." }),
  })
  .openapi("EmailPreviewRequest");

/** The answer of `POST /v1/email/preview`. */
export const EmailPreview = enveloped({
  to: z.string(),
  subject: z.string(),
  body: z.string(),
  isHtml: z.boolean(),
  templateId: int32(1).openapi({ description: "The EmailTemplate resource rendered." }),
  templateName: z.string(),
  licenseId: z.string().optional().openapi({ description: "The license rendered; absent for the sample license." }),
}).openapi("EmailPreview");

const previewEmailRoute = createRoute({
  method: "post",
  path: "/v1/email/preview",
  tags: ["Email"],
  operationId: "previewLicenseEmail",
  summary: "Render a license's email (or a sample license's) from its template, without sending it",
  ...access.key(roles),
  request: { body: { ...jsonBody(EmailPreviewBody), required: false } },
  responses: { 200: json(EmailPreview, "The message as it would be sent"), ...errorResponses },
});

const previewEmail: RouteHandler<typeof previewEmailRoute, AppEnv> = async (c) => {
  const { licenseId, templateId } = (c.req.valid("json") ?? {}) as z.infer<typeof EmailPreviewBody>;
  return ok(c, await previewLicenseMail(c.get("db"), { licenseId, templateId }));
};

const resendEmailRoute = createRoute({
  method: "post",
  path: "/v1/email/outbox/{emailId}/resend",
  tags: ["Email"],
  operationId: "resendOutboxEmail",
  summary: "Send an outbox message again, as a new message",
  description:
    "Queued again without the EMAIL binding, sent with it. 400 when the message was sent and its secrets were not kept (send a license's email again with POST /v1/email/license).",
  ...access.key(Roles.admin),
  request: { params: z.object({ emailId: int32PathParam("emailId") }) },
  responses: answer,
});

const resendOutboxEmail: RouteHandler<typeof resendEmailRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { emailId } = c.req.valid("param");
  return ok(c, await resendEmail({ db: ctx.db, config: ctx.config, transport: ctx.env.EMAIL }, emailId));
};

/**
 * Registers `POST /v1/email/send`, `POST /v1/email/license`, `POST /v1/email/preview`, and the outbox:
 * `GET /v1/email/outbox` (the list conventions) and `POST /v1/email/outbox/{emailId}/resend`, Administrator only.
 */
export function registerEmail(app: Router): void {
  app.openapi(sendEmailRoute, sendEmail);
  app.openapi(sendLicenseEmailRoute, sendLicenseEmail);
  app.openapi(previewEmailRoute, previewEmail);
  const admin = Roles.admin;
  crud(app, {
    entity: OutboxEmail,
    path: "/v1/email/outbox",
    tag: "Email",
    operationIds: { list: "listEmailOutbox" },
    label: "outbox message",
    operations: ["list"],
    roles: { list: admin, create: admin, update: admin, delete: admin },
    descriptions: {
      list: "Every message the service made, newest first by default in the console. Administrator only: a queued message holds its secrets.",
    },
  });
  app.openapi(resendEmailRoute, resendOutboxEmail);
}
