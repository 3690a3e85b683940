/** `GET /v1/extensions/keys` (anonymous): the JWK Set of the keys that sign license keys and update checks. */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { access } from "../../auth/guard";
import { anonymousErrorResponses, json } from "../../http/openapi";
import { send } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { signingKeys } from "../../auth/signing-keys";

const Jwk = z
  .object({
    kty: z.literal("EC"),
    crv: z.literal("P-256"),
    x: z.string(),
    y: z.string(),
    kid: z.string().openapi({
      description: "The RFC 7638 thumbprint; update checks name it in `keyId`, license keys in the JWS header.",
    }),
    alg: z.literal("ES256"),
    use: z.literal("sig"),
  })
  .openapi("Jwk");
const JwkSet = z.object({ keys: z.array(Jwk) }).openapi("JwkSet");

const getSigningKeysRoute = createRoute({
  method: "get",
  path: "/v1/extensions/keys",
  tags: ["Updates"],
  operationId: "getSigningKeys",
  summary: "Public keys that sign update check data and license keys (JWK Set)",
  ...access.anonymous(),
  responses: {
    200: json(JwkSet, "The JWK Set; the newest key signs, older keys stay published"),
    ...anonymousErrorResponses,
  },
});

const getSigningKeys: RouteHandler<typeof getSigningKeysRoute, AppEnv> = async (c) => {
  const keys = await signingKeys(c.get("db"), c.get("config"));
  return send(c, { keys: keys.published }, 200, { "Cache-Control": "public, max-age=300" });
};

export function registerSigningKeys(app: Router): void {
  app.openapi(getSigningKeysRoute, getSigningKeys);
}
