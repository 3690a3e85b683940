/**
 * Calls the Worker entry as another deployment would run it: the suite's bindings plus other variables (a
 * production deployment's, a gateway secret …). The suite's own Worker runs as Development (vitest.config.ts).
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { invalidateConfig } from "../src/kernel/config";
import worker from "../src/index";
import { BASE } from "./helpers";

/** Strong secrets (`openssl rand -base64 32`, as deployments make them) not published anywhere but in this test kit. */
export const STRONG = {
  Application__JwtSecret: "CfwNLXYZJWZJgefd07ZoIAF66V3G2F255kJUptdSbfI=",
  Application__EncryptionKey: "KxgTwWVHnguIr5H3UnZ4QiE1oErEO5wPnamQnTikBdw=",
};

/**
 * A production deployment's variables: the test bindings without the published bootstrap values, with strong
 * secrets and the public origin (Application:PublicUrl, required outside Development) the suite calls, plus `vars`.
 */
export function production(vars: Record<string, string | undefined> = {}): Record<string, unknown> {
  return {
    ...env,
    Application__Environment: "Production",
    Application__PublicUrl: BASE,
    Application__AdminUsername: undefined,
    Application__AdminPassword: undefined,
    Application__AdminApiKey: undefined,
    Webhooks__AllowInsecureUrls: undefined,
    // The suite's payment webhook secrets are readable test values, which a production deployment refuses.
    Commerce__Stripe__WebhookSecret: undefined,
    Commerce__Paddle__WebhookSecret: undefined,
    Commerce__LemonSqueezy__WebhookSecret: undefined,
    ...STRONG,
    ...vars,
  };
}

/** The suite's Development bindings plus `vars`. */
export function development(vars: Record<string, string | undefined> = {}): Record<string, unknown> {
  return { ...env, ...vars };
}

/** One request to the Worker entry under `variables`; the settings cache is dropped around it (other variables). */
export async function fetchAs(
  variables: Record<string, unknown>,
  path: string,
  init: RequestInit = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  invalidateConfig();
  try {
    const ctx = createExecutionContext();
    // A path, or a whole URL (another origin than the suite's).
    const url = /^https?:\/\//.test(path) ? path : `${BASE}${path}`;
    const res = await worker.fetch(new Request(url, init) as never, variables as never, ctx);
    const text = await res.text();
    await waitOnExecutionContext(ctx);
    return { status: res.status, text, headers: res.headers };
  } finally {
    invalidateConfig();
  }
}
