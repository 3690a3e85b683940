/**
 * Typed access to the REST wire as the service's OpenAPI document states it: `gen/openapi.ts` is generated from the
 * document the Worker serves (`npm run client:schema`, checked by test/node/openapi.test.ts), so the client's types
 * in `types.ts` derive from it instead of copying it, and a member the service renames or drops breaks the build.
 * Internal: index.ts does not export these.
 */
import type { components, operations } from "./gen/openapi.js";

/** The named schemas of the document. */
export type Schemas = components["schemas"];

/** The members every JSON answer carries (`success`, `code`, `message`, `reason`): the transport checks them. */
type EnvelopeMember = keyof Schemas["Envelope"];

/** `Omit` that insists the members exist, so a member the document drops is a type error here, not silence. */
export type Without<T, K extends keyof T> = Omit<T, K>;

/** The JSON body of an operation's request. */
export type Body<Op extends keyof operations> =
  NonNullable<operations[Op]["requestBody"]> extends {
    content: { "application/json": infer B };
  }
    ? B
    : never;

/** The JSON body of an operation's 200 answer, without the envelope's members. */
export type Answer<Op extends keyof operations> = operations[Op]["responses"] extends {
  200: { content: { "application/json": infer A } };
}
  ? Omit<A, EnvelopeMember>
  : never;

/** An operation's query parameters. */
export type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;

/** An operation's path parameters. */
export type PathParams<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["path"]>;
