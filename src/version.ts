/**
 * The service's release version, in a module of its own so that the OpenAPI document (app.ts) and `GET /v1/info`
 * (management/info.ts, which app.ts imports) read it without an import cycle.
 */
export const SERVICE_VERSION = "0.1.0";
