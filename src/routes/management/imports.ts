/**
 * `POST /v1/imports` and `GET /v1/imports/{importId}` (CONTRACT section 16; Administrator): moving licenses in from
 * Keygen or a CSV text, with a dry run and a report per row. The import service is imports/import-service.ts.
 */
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { Roles, access } from "../../auth/guard";
import type { AppEnv } from "../../http/app-env";
import { IMPORT_BODY_BYTES } from "../../http/body-limit";
import { serviceContext } from "../../http/context";
import { enveloped, errorResponses, int64, json, jsonBody } from "../../http/openapi";
import { ok } from "../../http/respond";
import type { Router } from "../../http/router";
import {
  IMPORT_CHUNK_ROWS,
  IMPORT_ERRORS_KEPT,
  IMPORT_INLINE_ROWS,
  importReport,
  requireImport,
  runImport,
} from "../../imports/import-service";
import { IMPORT_SOURCES } from "../../imports/rows";

const ImportRequest = z
  .object({
    source: z.enum(IMPORT_SOURCES).openapi({
      description:
        "`keygen`: `data` holds the JSON:API documents Keygen's API lists answer, `{ products, policies, licenses, machines, users }`, " +
        "each one document or an array of its pages. `csv`: `data` is a CSV text with a header row (columns legacyKey, product, " +
        "customerEmail, customerName, edition, expireDate, maxActivations, machines separated by `;`).",
    }),
    dryRun: z.boolean().optional().openapi({ description: "Judge every row and answer the report; write nothing." }),
    data: z.unknown().openapi({ description: "The source's data (see source)." }),
  })
  .openapi("ImportRequest");

const Problem = z.object({
  row: int64().openapi({ description: "The row (a CSV's line, a Keygen license's place in its pages); 0: the data." }),
  field: z.string(),
  message: z.string(),
});

const ImportReport = z
  .object({
    id: z.string().openapi({ description: "imp + 12 hex characters." }),
    source: z.enum(IMPORT_SOURCES),
    dryRun: z.boolean(),
    status: z.enum(["running", "done", "failed"]).openapi({
      description: `\`running\` while an import of more than ${IMPORT_INLINE_ROWS} rows is written off the request path, ${IMPORT_CHUNK_ROWS} rows at a time.`,
    }),
    total: int64().openapi({ description: "Rows the data held (licenses), those with errors included." }),
    processed: int64().openapi({ description: "Rows judged so far (all of them once done)." }),
    created: z.object({ customers: int64(), licenses: int64(), activations: int64() }),
    skipped: int64().openapi({
      description: "Rows imported before (found by source id, else legacy key): left as they are.",
    }),
    errorCount: int64(),
    errors: z.array(Problem).openapi({
      description: `Rows refused (never written), by row; the first ${IMPORT_ERRORS_KEPT}.`,
    }),
    unsupported: z.array(z.string()).openapi({ description: "What the data holds that has no equivalent here." }),
    createdAt: z.string().openapi({ format: "date-time" }),
    updatedAt: z.string().openapi({ format: "date-time" }),
  })
  .openapi("Import");

const startRoute = createRoute({
  method: "post",
  path: "/v1/imports",
  tags: ["Imports"],
  operationId: "startImport",
  summary: "Import licenses from Keygen or a CSV text",
  description:
    "Rows with an error are skipped, never half-written; the others are imported. Importing the same data again creates " +
    `nothing (rows are matched on their source ids, else on legacyKey). Up to ${IMPORT_INLINE_ROWS} rows are written before ` +
    `the answer (200); more run off the request path (202, status running; GET the import for its progress). The body is at most ${IMPORT_BODY_BYTES / 1024 / 1024} MiB.`,
  ...access.key(Roles.admin),
  request: { body: jsonBody(ImportRequest) },
  responses: {
    200: json(enveloped({ data: ImportReport }), "The import, done (or judged, for a dry run)"),
    202: json(enveloped({ data: ImportReport }), "The import, running"),
    ...errorResponses,
  },
});

const readRoute = createRoute({
  method: "get",
  path: "/v1/imports/{importId}",
  tags: ["Imports"],
  operationId: "getImport",
  summary: "An import's report and progress",
  ...access.key(Roles.admin),
  request: {
    params: z.object({
      importId: z
        .string()
        .max(32)
        .openapi({ param: { name: "importId", in: "path" } }),
    }),
  },
  responses: {
    200: json(enveloped({ data: ImportReport }), "The import"),
    ...errorResponses,
  },
});

const start: RouteHandler<typeof startRoute, AppEnv> = async (c) => {
  const body = c.req.valid("json");
  const record = await runImport(serviceContext(c), {
    source: body.source,
    dryRun: body.dryRun ?? false,
    data: body.data,
  });
  const data = importReport(record);
  return data.status === "running" ? ok(c, { data }, 202) : ok(c, { data }, 200);
};

const read: RouteHandler<typeof readRoute, AppEnv> = async (c) => {
  const record = await requireImport(serviceContext(c).db, c.req.valid("param").importId);
  return ok(c, { data: importReport(record) });
};

export function registerImports(app: Router): void {
  app.openapi(startRoute, start);
  app.openapi(readRoute, read);
}
