/**
 * The service's release version, in a module of its own so that the OpenAPI document (app/app.ts) and `GET /v1/info`
 * (routes/management/info.ts, which app/app.ts imports) read it without an import cycle.
 */
export const SERVICE_VERSION = "0.1.0";
