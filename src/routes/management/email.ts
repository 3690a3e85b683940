/**
 * `/v1/email/...` (Administrator, LicenseManager, Sales; SPEC access table "Log, server info, email"): send a
 * message, or a license's email rendered from the `EmailTemplate` resource. Sent through the EMAIL binding when it
 * is bound (`status: "sent"`), otherwise stored in the outbox (`status: "queued"`); see mail/.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { Roles, access } from "../../auth/guard";
import { type ServiceContext, serviceContext } from "../../http/context";
import { enveloped, errorResponses, int32, json, jsonBody } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { licenseMail } from "../../mail/license-mail";
import { type OutgoingMail, sendMail } from "../../mail/send";

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

/** Registers `POST /v1/email/send` and `POST /v1/email/license`. */
export function registerEmail(app: Router): void {
  app.openapi(sendEmailRoute, sendEmail);
  app.openapi(sendLicenseEmailRoute, sendLicenseEmail);
}
