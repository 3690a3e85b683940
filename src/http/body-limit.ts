/**
 * The size limit of JSON request bodies. A JSON body is read whole before it is validated (`c.req.json()`), so
 * without a limit one request could make the isolate hold and parse up to the platform's 100 MB; with it, a body over
 * 4 MiB answers 413 before any of it is parsed and nothing is written. Uploads are not JSON: multipart and raw part
 * bodies stream through their routes, which bound them as they read. An anonymous route that reads its body whole
 * whatever its type (a payment provider's webhook, read raw to check its signature) takes `jsonOnly`: the same limit
 * on any body, and 415 for a body that says it is not JSON.
 */
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { AppEnv } from "./app-env";
import { ApiError } from "../kernel/errors";

/**
 * Largest JSON body: room for the largest field any route takes (a resource's `data`, 1,000,000 characters, or a
 * report's content) with its envelope.
 */
export const MAX_JSON_BODY_BYTES = 4 * 1024 * 1024;

// Every media type the service reads as JSON (application/json, application/*+json, text/json), in any case.
const JSON_MEDIA_TYPE = /^\s*(application\/([\w.-]+\+)?json|text\/json)\s*(;|$)/i;

/**
 * The one larger JSON body: an import's data (`POST /v1/imports`, CONTRACT 16), a CSV of 100,000 licenses or a Keygen
 * export's pages; larger exports are imported in parts.
 */
export const IMPORT_BODY_BYTES = 16 * 1024 * 1024;
const IMPORT_PATH = "/v1/imports";

const limitTo = (maxSize: number) =>
  bodyLimit({
    maxSize,
    onError: () => {
      throw new ApiError(413, `The request body is larger than ${maxSize / 1024 / 1024} MiB`);
    },
  });
const limit = limitTo(MAX_JSON_BODY_BYTES);
const importLimit = limitTo(IMPORT_BODY_BYTES);

/**
 * Refuses JSON bodies over MAX_JSON_BODY_BYTES (an import's, IMPORT_BODY_BYTES) with 413: by Content-Length when it
 * is sent, else by counting the stream. Requests without a JSON body pass untouched, at the cost of one header read.
 */
export const jsonBodyLimit: MiddlewareHandler<AppEnv> = (c, next) => {
  const type = c.req.header("content-type");
  if (type === undefined || !JSON_MEDIA_TYPE.test(type)) return next();
  return c.req.path === IMPORT_PATH && c.req.method === "POST" ? importLimit(c, next) : limit(c, next);
};

/**
 * A route whose body must be JSON and is read whole as text: 415 for another declared media type, and the JSON limit
 * (413) for every body, typed or not, by Content-Length or by counting the stream, before any of it is read.
 */
export const jsonOnly: MiddlewareHandler<AppEnv> = (c, next) => {
  const type = c.req.header("content-type");
  if (type !== undefined && !JSON_MEDIA_TYPE.test(type))
    throw new ApiError(415, `The body must be JSON (application/json), not ${type.split(";")[0]!.trim()}`);
  return limit(c, next);
};
