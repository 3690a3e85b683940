/**
 * Release downloads (SPEC "Release download routes", CONTRACT section 7), API key only, roles Administrator and
 * LicenseManager, under `/v1/products/{productId}/releases/{releaseId}/downloads`:
 *   GET     list (filter, sort, take, skip; no select)        PUT     platform, kind, fileName, signature, url
 *                                                              (kind blockmap only on bytes that are one)
 *   POST    add: JSON (hosted, sourceKind url) or multipart   DELETE  /{downloadId}: the row and its bytes
 *   POST    /verify: re-hash every uploaded artifact
 *   POST    /uploads, PUT /uploads/{uploadId}/parts/{partNumber}, POST /uploads/{uploadId}/complete,
 *   DELETE  /uploads/{uploadId}: resumable uploads for files over what one request can carry
 * Every change bumps the product's release generation (cached feeds go stale at once).
 */
import { refuseUnsignedArchive } from "../../updates/vendor-signatures";
import { type RouteHandler, createRoute, z } from "@hono/zod-openapi";
import { Roles, access } from "../../auth/guard";
import type { Row } from "../../http/repository";
import { productReleases, releaseDownloads } from "../../db/schema";
import { type ServiceContext, serviceContext } from "../../http/context";
import { crud, intIdParam } from "../crud";
import { ApiError } from "../../kernel/errors";
import { enveloped, errorResponses, int32, int64, json, jsonBody } from "../../http/openapi";
import { ok, zodProblem } from "../../http/respond";
import type { AppEnv } from "../../http/app-env";
import type { Router } from "../../http/router";
import { ProductRelease } from "../../records/releases";
import {
  type DownloadTarget,
  addHosted,
  afterArtifactDeleted,
  checkRelabel,
  type UploadSigning,
  commitStaged,
  downloadTarget,
  publishedDownloads,
  refuseTaken,
  stageLocal,
  stageResource,
  verifyRelease,
} from "../../updates/artifacts";
import {
  HostedDownloadInput,
  ReleaseDownload,
  UploadFields,
  UploadInput,
  hostedUrlProblem,
} from "../../updates/release-download";
import { MultipartReader, formBoundary } from "../../http/multipart";
import { MAX_PART_NUMBER, abortUpload, completeUpload, createUpload, uploadPart } from "../../updates/uploads";
import { checkResigned, signerChangeAllowed } from "../../updates/signer-check";
import { Product } from "../../records/products";

const PATH = "/v1/products/{productId}/releases/{releaseId}/downloads";
const TAG = "Release downloads";
/** Plain form fields are short; a signature is the longest. */
const MAX_FIELD_BYTES = 20_000;
const FORM_FIELDS = new Set([
  "platform",
  "kind",
  "fileName",
  "sourceKind",
  "signature",
  "sha1",
  "sha256",
  "sha512",
  "allowSignerChange",
]);

/** `?allowSignerChange=true`: an Administrator accepts a deliberate change of signing identity (CONTRACT section 15). */
const signerChangeQuery = z.object({
  allowSignerChange: z.enum(["true", "false"]).optional().openapi({
    description:
      "true: accept a build signed by another identity than the product's or the previous release's (Administrators only; recorded on the release and in the audit trail).",
  }),
});

/** `allowSignerChange` as the form or the query gives it: true or false (400 otherwise), judged by the service. */
function allowsSignerChange(ctx: ServiceContext, value: string | undefined): boolean {
  if (value !== undefined && value !== "true" && value !== "false")
    throw new ApiError(400, `allowSignerChange must be true or false, not "${value}"`);
  return signerChangeAllowed(ctx, value === "true");
}

function uploadSigning(ctx: ServiceContext, target: DownloadTarget, allowSignerChange: boolean): UploadSigning {
  return { ctx, keys: target, allowSignerChange };
}

const releaseParams = z.object({ productId: intIdParam("productId"), releaseId: intIdParam("releaseId") });
const uploadParams = releaseParams.extend({
  uploadId: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "uploadId", in: "path" }, description: "The id `POST .../downloads/uploads` answered." }),
});
const partParams = uploadParams.extend({
  partNumber: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PART_NUMBER)
    .openapi({
      param: { name: "partNumber", in: "path" },
      type: "integer",
      format: "int32",
      minimum: 1,
      maximum: MAX_PART_NUMBER,
      description: `1 to ${MAX_PART_NUMBER}, without gaps.`,
    }),
});

const Created = enveloped({
  releaseDownloadId: int32(1),
  size: int64().openapi({ description: "Bytes." }),
  sha256: z.string().openapi({ description: "Lowercase hex." }),
  sha512: z.string().openapi({ description: "Base64." }),
});

/** The 201 answer of every route that adds an artifact. */
function createdBody(row: Row) {
  return {
    releaseDownloadId: row["id"] as number,
    size: row["size"] as number,
    sha256: row["sha256"] as string,
    sha512: row["sha512"] as string,
  };
}

/** The multipart form of POST, documented for clients; read by MultipartReader, not by a validator (it streams). */
const multipartSchema = {
  type: "object" as const,
  required: ["file", "platform", "kind"],
  properties: {
    file: {
      type: "string" as const,
      format: "binary",
      description: "The artifact's bytes. Send it after the other fields.",
    },
    platform: { type: "string" as const, enum: [...ReleaseDownload.fields.platform.input.options] },
    kind: { type: "string" as const, enum: [...ReleaseDownload.fields.kind.input.options] },
    fileName: { type: "string" as const, maxLength: 255, description: "Default: the file part's file name." },
    sourceKind: {
      type: "string" as const,
      enum: ["local", "resource"],
      description:
        "local (default): R2 under Extensions:DownloadRoot; resource: the database, up to Extensions:MaxResourceArtifactBytes.",
    },
    signature: { type: "string" as const, maxLength: 16_384 },
    sha1: {
      type: "string" as const,
      maxLength: 40,
      pattern: "^[0-9a-fA-F]{40}$",
      description:
        "Optional: the file's SHA-1 (hex) as the publisher computed it; the upload is refused when it differs.",
    },
    sha256: {
      type: "string" as const,
      maxLength: 64,
      pattern: "^[0-9a-fA-F]{64}$",
      description: "Optional: the file's SHA-256 (hex); the upload is refused when it differs.",
    },
    sha512: {
      type: "string" as const,
      maxLength: 88,
      description: "Optional: the file's SHA-512 (standard base64); the upload is refused when it differs.",
    },
  },
};

const roles = Roles.managers;

/** The answers of a route that adds an uploaded artifact: added, or refused by the signing check (CONTRACT 15). */
const addedResponses = {
  201: json(Created, "The artifact was added"),
  ...errorResponses,
  409: json(
    enveloped({}),
    "The build's signer or signature would strand installs: reason signerChanged, unsigned or signatureInvalid",
  ),
};

const createReleaseDownloadRoute = createRoute({
  method: "post",
  path: PATH,
  tags: [TAG],
  operationId: "createReleaseDownload",
  summary: "Add an artifact: a hosted URL (JSON) or an uploaded file (multipart/form-data)",
  description:
    'JSON `{releaseDownload: {platform, kind, fileName, sourceKind: "url", url, size, sha256, sha512}}` adds a hosted artifact. ' +
    "multipart/form-data uploads the file (part `file`, after the fields platform, kind, fileName, sourceKind, signature and optionally the publisher's sha1, sha256, sha512); the service computes size and hashes (sha256, sha512, sha1) while it streams and refuses the file (400, nothing stored) when a declared hash differs. " +
    "Only releases of application products with a major.minor.patch version take downloads; one artifact per platform and kind. " +
    "An uploaded Windows or macOS build's signer is checked against the product's windowsPublisherNames or macTeamIds, else the previous public release's signer, and a Tauri or Sparkle signature against the product's key: 409 with reason signerChanged, unsigned or signatureInvalid (CONTRACT section 15), 400 for a file that is not what its name says; nothing is stored either way.",
  ...access.key(roles),
  request: {
    params: releaseParams,
    query: signerChangeQuery,
    body: {
      required: false,
      content: {
        "application/json": { schema: z.object({ releaseDownload: HostedDownloadInput }) },
        "multipart/form-data": { schema: multipartSchema },
      },
    },
  },
  responses: {
    ...addedResponses,
    413: json(enveloped({}), "The file is larger than Extensions:MaxResourceArtifactBytes (sourceKind resource)"),
  },
});

const createReleaseDownload: RouteHandler<typeof createReleaseDownloadRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { productId, releaseId } = c.req.valid("param");
  const target = await downloadTarget(ctx.db, productId, releaseId);
  const boundary = formBoundary(c.req.header("content-type"));
  let row: Row;
  if (boundary !== undefined) {
    if (!c.req.raw.body) throw new ApiError(400, "The multipart body is empty");
    const query = c.req.valid("query").allowSignerChange;
    row = await addUploaded(ctx, target, new MultipartReader(c.req.raw.body, boundary), query);
  } else {
    const input = hostedBody(c.req).releaseDownload;
    if (!input)
      throw new ApiError(
        400,
        "Send {releaseDownload: {...}} as JSON for a hosted artifact, or the file as multipart/form-data",
      );
    if ((input.sourceKind ?? "url") !== "url") {
      throw new ApiError(
        400,
        `sourceKind ${input.sourceKind} stores uploaded bytes: send the file as multipart/form-data (the JSON form adds hosted artifacts, sourceKind url)`,
      );
    }
    row = await addHosted(ctx, target, input);
  }
  return ok(c, createdBody(row), 201);
};

const verifyReleaseDownloadsRoute = createRoute({
  method: "post",
  path: `${PATH}/verify`,
  tags: [TAG],
  operationId: "verifyReleaseDownloads",
  summary: "Re-hash every uploaded artifact of the release",
  description:
    "Streams the stored bytes of every local and resource artifact and compares size, sha256 and sha512 with the record. Hosted (url) artifacts are not checked.",
  ...access.key(roles),
  request: { params: releaseParams },
  responses: {
    200: json(
      enveloped({
        drifted: z.array(int32(1)).openapi({
          description: "Ids of artifacts whose bytes are missing or do not match their size and hashes.",
        }),
        checked: int64().openapi({ description: "How many uploaded artifacts were checked." }),
      }),
      "The result of the check",
    ),
    ...errorResponses,
  },
});

const verifyReleaseDownloads: RouteHandler<typeof verifyReleaseDownloadsRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { productId, releaseId } = c.req.valid("param");
  return ok(c, await verifyRelease(ctx.env, ctx.db, productId, releaseId));
};

/** Registers the release download routes. */
export function registerDownloads(app: Router): void {
  crud(app, {
    entity: ReleaseDownload,
    path: PATH,
    tag: TAG,
    operationIds: { list: "listReleaseDownloads", update: "updateReleaseDownload", delete: "deleteReleaseDownload" },
    label: "release download",
    operations: ["list", "update", "delete"],
    listParams: ["filter", "sort", "take", "skip"],
    idParam: "downloadId",
    roles: { list: roles, create: roles, update: roles, delete: roles },
    descriptions: {
      update:
        "Changes platform, kind, fileName, signature and (hosted artifacts only) url. size, sha256 and sha512 are never changed: they are ignored in the body; to replace the bytes, delete the artifact and add it again.",
      delete: "Deletes the artifact and its stored bytes (R2 object or database chunks).",
    },
    scope: {
      param: "releaseId",
      parent: ProductRelease,
      column: releaseDownloads.releaseId,
      where: (releaseId) => publishedDownloads(releaseId as number)!,
      parentScope: { param: "productId", column: productReleases.productId, parent: Product },
    },
    hooks: {
      update: async (ctx, values, existing) => {
        await checkRelabel(ctx, values, existing);
        return checkUpdate(await checkResigned(ctx, values, existing), existing);
      },
      // The repository bumps the product's release generation with every write (ReleaseDownload.releaseGeneration).
      written: async (ctx, operation, row) => {
        if (operation === "delete") await afterArtifactDeleted(ctx, row);
      },
    },
  });

  app.openapi(createReleaseDownloadRoute, createReleaseDownload);
  app.openapi(verifyReleaseDownloadsRoute, verifyReleaseDownloads);

  registerUploads(app);
}

/**
 * The validated JSON body of POST. The route declares a second, non-zod media type (the streamed multipart form), so
 * the typings no longer infer the JSON one; the validator ran all the same (or left `{}` when the body is not JSON).
 */
function hostedBody(req: unknown): { releaseDownload?: z.infer<typeof HostedDownloadInput> } {
  return (req as { valid(target: "json"): { releaseDownload?: z.infer<typeof HostedDownloadInput> } }).valid("json");
}

/** PUT rules beyond the schema: url belongs to hosted artifacts only and cannot be cleared on them. */
function checkUpdate(values: Row, existing: Row): Row {
  if (values["url"] === undefined) return values;
  if (existing["sourceKind"] !== "url")
    throw new ApiError(
      400,
      `url can be changed only on hosted artifacts (sourceKind url); this one is ${existing["sourceKind"]}`,
    );
  if (values["url"] === null) throw new ApiError(400, "url is required for a hosted artifact");
  const problem = hostedUrlProblem(values["url"] as string);
  if (problem) throw new ApiError(400, problem);
  return values;
}

/**
 * Reads the form in order: the plain fields, then the file part, whose bytes stream into storage. The fields are
 * checked before any byte is stored; a part after the file is refused (and what was stored removed).
 */
async function addUploaded(
  ctx: ServiceContext,
  target: DownloadTarget,
  form: MultipartReader,
  allowQuery: string | undefined,
): Promise<Row> {
  const fields: Record<string, string> = {};
  for (let part = await form.next(); part; part = await form.next()) {
    if (part.name !== "file") {
      if (FORM_FIELDS.has(part.name)) {
        const value = await form.text(MAX_FIELD_BYTES, part.name);
        if (value !== "") fields[part.name] = value;
      }
      continue;
    }
    const parsed = UploadFields.safeParse({ ...fields, fileName: fields["fileName"] ?? part.fileName });
    if (!parsed.success) {
      await form.cancel();
      throw zodProblem(parsed.error);
    }
    let allowSignerChange: boolean;
    try {
      refuseUnsignedArchive(parsed.data);
      allowSignerChange = allowsSignerChange(ctx, fields["allowSignerChange"] ?? allowQuery);
    } catch (e) {
      await form.cancel();
      throw e;
    }
    await refuseTaken(ctx.db, target.releaseId, parsed.data.platform, parsed.data.kind);
    const stage = parsed.data.sourceKind === "resource" ? stageResource : stageLocal;
    const staged = await stage(ctx, target, parsed.data, form.bytes());
    return commitStaged(staged, uploadSigning(ctx, target, allowSignerChange), async () => {
      const extra = await form.next();
      if (extra)
        throw new ApiError(
          400,
          `The form part "${extra.name}" comes after the file; send every field before the file part`,
        );
    });
  }
  throw new ApiError(400, "The form has no part named file");
}

const uploads = `${PATH}/uploads`;

const createReleaseDownloadUploadRoute = createRoute({
  method: "post",
  path: uploads,
  tags: [TAG],
  operationId: "createReleaseDownloadUpload",
  summary: "Start a resumable upload (files too large for one request)",
  description:
    "Starts an upload of a local (R2) artifact. Send its parts with PUT .../uploads/{uploadId}/parts/{partNumber}, numbered from 1: every part but the last has the same size, at least 5 MiB (R2's rule), and each fits in one request (under 100 MB). Then POST .../complete, or DELETE the upload to abandon it.",
  ...access.key(roles),
  request: { params: releaseParams, body: jsonBody(z.object({ upload: UploadInput })) },
  responses: { 201: json(enveloped({ uploadId: z.string() }), "The upload was started"), ...errorResponses },
});

const createReleaseDownloadUpload: RouteHandler<typeof createReleaseDownloadUploadRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { productId, releaseId } = c.req.valid("param");
  const target = await downloadTarget(ctx.db, productId, releaseId);
  const uploadId = await createUpload(ctx, target, c.req.valid("json").upload);
  return ok(c, { uploadId }, 201);
};

const uploadReleaseDownloadPartRoute = createRoute({
  method: "put",
  path: `${uploads}/{uploadId}/parts/{partNumber}`,
  tags: [TAG],
  operationId: "uploadReleaseDownloadPart",
  summary: "Store one part of a resumable upload (the raw request body)",
  description: "The body is the part's bytes, with Content-Length. Sending a part number again replaces that part.",
  ...access.key(roles),
  request: {
    params: partParams,
    body: {
      required: true,
      content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
    },
  },
  responses: {
    200: json(enveloped({ partNumber: int32(1, MAX_PART_NUMBER), size: int64() }), "The part was stored"),
    411: json(enveloped({}), "No Content-Length"),
    ...errorResponses,
  },
});

const uploadReleaseDownloadPart: RouteHandler<typeof uploadReleaseDownloadPartRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { productId, releaseId, uploadId, partNumber } = c.req.valid("param");
  const length = Number(c.req.header("content-length") ?? Number.NaN);
  if (!Number.isSafeInteger(length))
    throw new ApiError(411, "Content-Length is required: R2 stores a part only with its length known");
  if (length === 0 || !c.req.raw.body) throw new ApiError(400, "The part is empty");
  const part = await uploadPart(ctx, { productId, releaseId, uploadId }, partNumber, c.req.raw.body, length);
  return ok(c, { partNumber: part.partNumber, size: part.size });
};

const completeReleaseDownloadUploadRoute = createRoute({
  method: "post",
  path: `${uploads}/{uploadId}/complete`,
  tags: [TAG],
  operationId: "completeReleaseDownloadUpload",
  summary: "Complete a resumable upload: assemble, hash and add the artifact",
  ...access.key(roles),
  request: { params: uploadParams, query: signerChangeQuery },
  responses: {
    ...addedResponses,
  },
});

const completeReleaseDownloadUpload: RouteHandler<typeof completeReleaseDownloadUploadRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  const { productId, releaseId, uploadId } = c.req.valid("param");
  const target = await downloadTarget(ctx.db, productId, releaseId);
  const allow = allowsSignerChange(ctx, c.req.valid("query").allowSignerChange);
  return ok(c, createdBody(await completeUpload(ctx, target, uploadId, uploadSigning(ctx, target, allow))), 201);
};

const abortReleaseDownloadUploadRoute = createRoute({
  method: "delete",
  path: `${uploads}/{uploadId}`,
  tags: [TAG],
  operationId: "abortReleaseDownloadUpload",
  summary: "Abort a resumable upload and remove its parts",
  ...access.key(roles),
  request: { params: uploadParams },
  responses: { 200: json(enveloped({}), "The upload was aborted"), ...errorResponses },
});

const abortReleaseDownloadUpload: RouteHandler<typeof abortReleaseDownloadUploadRoute, AppEnv> = async (c) => {
  const ctx = serviceContext(c);
  await abortUpload(ctx, c.req.valid("param"));
  return ok(c, {});
};

function registerUploads(app: Router): void {
  app.openapi(createReleaseDownloadUploadRoute, createReleaseDownloadUpload);
  app.openapi(uploadReleaseDownloadPartRoute, uploadReleaseDownloadPart);
  app.openapi(completeReleaseDownloadUploadRoute, completeReleaseDownloadUpload);
  app.openapi(abortReleaseDownloadUploadRoute, abortReleaseDownloadUpload);
}
