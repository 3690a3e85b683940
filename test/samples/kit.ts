/** Shared pieces of the sample requests used by the access-table walk (test/access.test.ts). */
import { admin } from "../helpers";
import type { JsonBody } from "../json-body.ts";

/** A request that succeeds for an allowed caller: its path (placeholders filled) and body. */
export interface Sample {
  path?: string;
  body?: unknown;
  /** Request headers the route needs (a payment provider's signature). */
  headers?: Record<string, string>;
}
/**
 * `"<METHOD> <OpenAPI path>"` -> a function building a fresh sample (deletes get a fresh target each call). `key` is
 * the API key the request will be sent with, for fixtures bound to the key that made them (resumable uploads).
 */
export type Samples = Record<string, (key?: string) => Promise<Sample>>;

/** Creates a record with the administrator's key and returns the id property of the answer. */
export async function created(path: string, body: unknown, idName: string): Promise<JsonBody[string]> {
  const res = await admin("POST", path, body);
  if (res.status !== 200 && res.status !== 201) throw new Error(`fixture ${path}: ${res.status} ${res.text}`);
  return res.body[idName];
}
