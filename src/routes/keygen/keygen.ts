/**
 * Keygen-compatible routes (CONTRACT section 16), for applications built against Keygen once their vendor points the
 * domain they call at this service: validate-key, and machines created and deleted with `Authorization: License
 * <key>`. Off (404) unless Compat:Keygen:Account names the account in their path. Their bodies are Keygen's JSON:API
 * documents (imports/keygen-compat.ts), not the service's envelope.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { access } from "../../auth/guard";
import type { AppEnv } from "../../http/app-env";
import { clientInfo, serviceContext } from "../../http/context";
import type { Router } from "../../http/router";
import { documented } from "../../http/router";
import { anonymousErrorResponses } from "../../http/openapi";
import {
  type KeygenAnswer,
  type MachineBody,
  type ValidateKeyBody,
  activateMachine,
  deactivateMachine,
  keygenAccount,
  validateKey,
} from "../../imports/keygen-compat";

const JSON_API = "application/vnd.api+json";
const account = z
  .string()
  .max(128)
  .openapi({ param: { name: "account", in: "path" } });
const document = (description: string) => ({ description, content: { [JSON_API]: { schema: z.unknown() } } });
const NOTE =
  "Keygen-compatible (docs/migrating.md): off, answering 404, unless Compat:Keygen:Account names the account in the path. " +
  "The bodies are Keygen's JSON:API documents, as its API reference shows them.";

const validateKeyRoute = createRoute({
  method: "post",
  path: "/v1/accounts/{account}/licenses/actions/validate-key",
  tags: ["Keygen compatibility"],
  operationId: "keygenValidateKey",
  summary: "Validate a license key, as Keygen's validate-key action",
  description: `${NOTE} Body \`{ meta: { key, scope?: { fingerprint?, product? } } }\`; 200 with \`meta: { valid, code, detail }\` and the license (null when the key names none).`,
  ...access.anonymous(),
  request: { params: z.object({ account }) },
  responses: {
    200: document("The validation"),
    400: document("No key"),
    404: document("Unknown account"),
    429: anonymousErrorResponses[429],
    500: anonymousErrorResponses[500],
  },
});

const createMachineRoute = createRoute({
  method: "post",
  path: "/v1/accounts/{account}/machines",
  tags: ["Keygen compatibility"],
  operationId: "keygenCreateMachine",
  summary: "Activate a machine, as Keygen's machine creation with license key authentication",
  description: `${NOTE} \`Authorization: License <key>\`; body \`{ data: { type: "machines", attributes: { fingerprint, name? }, relationships: { license: { data: { type: "licenses", id } } } } }\`. 422 MACHINE_LIMIT_EXCEEDED at the license's limit, FINGERPRINT_TAKEN for a machine it holds.`,
  ...access.anonymous(),
  request: { params: z.object({ account }) },
  responses: {
    201: document("The machine"),
    401: document("No or an unknown license key"),
    403: document("A suspended or expired license, or another license's id"),
    404: document("Unknown account"),
    422: document("The machine limit, a fingerprint taken or missing"),
    429: anonymousErrorResponses[429],
    500: anonymousErrorResponses[500],
  },
});

const deleteMachineRoute = createRoute({
  method: "delete",
  path: "/v1/accounts/{account}/machines/{id}",
  tags: ["Keygen compatibility"],
  operationId: "keygenDeleteMachine",
  summary: "Deactivate a machine, as Keygen's machine deletion with license key authentication",
  description: `${NOTE} \`Authorization: License <key>\`; the machine by the id Keygen gave it (imported) or the one its creation here answered.`,
  ...access.anonymous(),
  request: {
    params: z.object({
      account,
      id: z
        .string()
        .max(128)
        .openapi({ param: { name: "id", in: "path" } }),
    }),
  },
  responses: {
    204: { description: "Deactivated" },
    401: document("No or an unknown license key"),
    404: document("Unknown account or machine"),
    422: document("The license's deactivations for this month are used up"),
    429: anonymousErrorResponses[429],
    500: anonymousErrorResponses[500],
  },
});

/** A Keygen answer as a response. */
function respond(answer: KeygenAnswer): Response {
  if (answer.body === null) return new Response(null, { status: answer.status });
  return new Response(JSON.stringify(answer.body), {
    status: answer.status,
    headers: { "Content-Type": JSON_API, "Cache-Control": "no-store" },
  });
}

/** The route's account checked, and its JSON body read (Keygen's 400 when it is not JSON). */
async function open<B>(c: Context<AppEnv>, body: boolean): Promise<KeygenAnswer | { body: B }> {
  const refused = keygenAccount(serviceContext(c).config, c.req.param("account") ?? "");
  if (refused) return refused;
  if (!body) return { body: {} as B };
  try {
    const parsed: unknown = await c.req.json();
    return { body: (typeof parsed === "object" && parsed !== null ? parsed : {}) as B };
  } catch {
    return { status: 400, body: { errors: [{ title: "Bad request", detail: "The request body is not valid JSON" }] } };
  }
}

export function registerKeygenRoutes(app: Router): void {
  documented(app, validateKeyRoute, async (c) => {
    const opened = await open<ValidateKeyBody>(c, true);
    if ("status" in opened) return respond(opened);
    return respond(await validateKey(serviceContext(c), c.req.param("account")!, opened.body, clientInfo(c)));
  });
  documented(app, createMachineRoute, async (c) => {
    const opened = await open<MachineBody>(c, true);
    if ("status" in opened) return respond(opened);
    const ctx = serviceContext(c);
    return respond(
      await activateMachine(ctx, c.req.param("account")!, c.req.header("authorization"), opened.body, clientInfo(c)),
    );
  });
  documented(app, deleteMachineRoute, async (c) => {
    const opened = await open(c, false);
    if ("status" in opened) return respond(opened);
    const ctx = serviceContext(c);
    return respond(await deactivateMachine(ctx, c.req.header("authorization"), c.req.param("id")!, clientInfo(c)));
  });
}
