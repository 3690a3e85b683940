/**
 * The release download record (SPEC "Release download (artifact)", CONTRACT section 7) and the rules of its values:
 * platforms, kinds, file names that fit one URL path segment, hosted URLs, and hashes in the forms the feed serves.
 */
import { z } from "@hono/zod-openapi";
import { sql } from "drizzle-orm";
import { productReleases, releaseDownloads } from "../db/schema";
import { DECEPTIVE_CHARACTERS, defineEntity, f } from "../http/entity";
import { int64 } from "../http/openapi";
import { PLATFORMS } from "../records/vocabulary";

export { PLATFORMS };
/**
 * What an artifact is to an auto-updater: the installer, the zip (macOS updates), a delta, a blockmap (SPEC's four),
 * a package (a full .nupkg of Squirrel.Windows or Velopack) or an archive (Tauri's updater bundle, .tar.gz or .zip).
 * Deltas of Squirrel.Windows and Velopack use `delta` with a .nupkg file name.
 */
export const KINDS = ["installer", "zip", "delta", "blockmap", "package", "archive"] as const;
/** Where an artifact's bytes are: hosted elsewhere (url), in R2 (local) or in D1 chunks (resource). */
export const SOURCE_KINDS = ["url", "local", "resource"] as const;
/** The kinds that store their bytes with the service. */
export const UPLOAD_SOURCE_KINDS = ["local", "resource"] as const;

/**
 * A file name is the last segment of the download URL and of the R2 key: no separators, dot segments, control
 * characters, or bidirectional controls that would show users another name than the one they download.
 */
export const FILE_NAME = new RegExp(`^(?!\\.\\.?$)[^/\\\\${DECEPTIVE_CHARACTERS}]{1,255}$`);
const FILE_NAME_MESSAGE =
  "A file name of 1 to 255 characters without '/', '\\', control or bidirectional characters, and not '.' or '..'";
/** The hash forms the feed serves: SHA-256 lowercase hex, SHA-512 standard base64 (64 bytes = 88 characters). */
export const SHA256_HEX = /^[0-9a-f]{64}$/;
export const SHA512_BASE64 = /^[A-Za-z0-9+/]{86}==$/;
/** SHA-1 as Squirrel.Windows' RELEASES and Velopack's feed carry it: 40 hex characters (stored lowercase). */
export const SHA1_HEX = /^[0-9a-fA-F]{40}$/;

/** Declared hashes of an uploaded file (optional): the upload is refused when one differs from the stored bytes'. */
const declaredHashFields = {
  sha1: z
    .string()
    .length(40)
    .regex(SHA1_HEX, "40 hex characters")
    .optional()
    .openapi({ description: "The file's SHA-1 as the publisher computed it (hex); refused when it differs." }),
  sha256: z
    .string()
    .length(64)
    .regex(/^[0-9a-fA-F]{64}$/, "64 hex characters")
    .optional()
    .openapi({ description: "The file's SHA-256 as the publisher computed it (hex); refused when it differs." }),
  sha512: z
    .string()
    .length(88)
    .regex(SHA512_BASE64, "88 characters of standard base64")
    .optional()
    .openapi({ description: "The file's SHA-512 (base64) as the publisher computed it; refused when it differs." }),
};

/** Why `url` cannot be a hosted artifact's address, or undefined when it can. */
export function hostedUrlProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "url must be an absolute https:// address";
  }
  if (parsed.protocol !== "https:") return "url must be an absolute https:// address";
  if (parsed.username || parsed.password) return "url must not carry credentials";
  return undefined;
}

/** Body schemas of a file name and of a hosted artifact's URL. */
export const fileNameSchema = z
  .string()
  .max(255)
  .regex(FILE_NAME, FILE_NAME_MESSAGE)
  .openapi({ description: "Last segment of the download URL." });
export const hostedUrlSchema = z
  .string()
  .max(2048)
  .superRefine((url, ctx) => {
    const problem = hostedUrlProblem(url);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  })
  .openapi({ description: "Absolute https:// address without credentials (sourceKind url only)." });

/** The platform prefix of an artifact row whose upload is still in progress: invisible to lists and feeds. */
export const PENDING_PLATFORM = "pending:";

/** The artifact record; `storageKey` stays internal (not a field, so never returned or filtered). */
export const ReleaseDownload = defineEntity({
  name: "ReleaseDownload",
  singular: "releaseDownload",
  plural: "releaseDownloads",
  table: releaseDownloads,
  // An artifact's writes bump the release generation of its release's product (http/repository.ts); a row of an
  // upload in progress feeds nothing, so its writes bump nothing (its commit, which names the platform, does).
  releaseGeneration: (id) =>
    sql`(SELECT ${productReleases.productId} FROM ${productReleases} WHERE ${productReleases.id} = (SELECT ${releaseDownloads.releaseId} FROM ${releaseDownloads} WHERE ${releaseDownloads.id} = ${id} AND ${releaseDownloads.platform} NOT LIKE ${`${PENDING_PLATFORM}%`}))`,
  fields: {
    id: f.id(),
    releaseId: f.int({ readOnly: true }),
    platform: f.oneOf(PLATFORMS),
    kind: f.oneOf(KINDS),
    fileName: { ...f.string({ max: 255 }), input: fileNameSchema },
    sourceKind: f.oneOf(SOURCE_KINDS, {
      readOnly: true,
      description: "url (hosted elsewhere), local (R2) or resource (the database).",
    }),
    url: { ...f.string({ max: 2048 }), input: hostedUrlSchema },
    size: {
      filter: "integer" as const,
      output: int64().openapi({ description: "Bytes." }),
      input: int64(),
      readOnly: true,
    },
    sha256: f.string({ readOnly: true, description: "Lowercase hex." }),
    sha512: f.string({ readOnly: true, description: "Base64." }),
    sha1: f.string({
      readOnly: true,
      description:
        "Lowercase hex (Squirrel.Windows and Velopack packages); null on artifacts added before it was kept.",
    }),
    signature: f.string({ max: 16_384, description: "The file's signature, as the publisher made it." }),
    signer: f.string({
      readOnly: true,
      description:
        "The Authenticode signer's subject common name the upload's check found (a Windows .exe, .msi, .nupkg); null when unsigned or not checked.",
    }),
    teamId: f.string({
      readOnly: true,
      description: "The Apple Team ID of the macOS app in an uploaded .zip; null when unsigned, ad-hoc or not checked.",
    }),
    signatureVerified: f.bool({
      readOnly: true,
      description:
        "true when the Tauri (minisign) or Sparkle (EdDSA) signature was verified over the uploaded bytes with the product's key; null when not checked.",
    }),
    downloadCount: {
      filter: "integer" as const,
      output: int64(0).openapi({
        description:
          "Completed downloads the service served: answers that delivered the file through its last byte (a whole GET, or the range that finishes a resumed one) or redirected to a hosted artifact. HEAD, 304 and ranges short of the end do not count; copies served by browser or proxy caches are not seen. Added by a queue, so a download shows up a few seconds after it completed.",
      }),
      input: int64(0),
      readOnly: true,
    },
    createdAt: f.date({ readOnly: true }),
    updatedAt: f.date({ readOnly: true }),
  },
  required: ["platform", "kind", "fileName"],
});

/** JSON create body: a hosted artifact, with the size and hashes its publisher computed. */
export const HostedDownloadInput = z
  .object({
    platform: z.enum(PLATFORMS),
    kind: z.enum(KINDS),
    fileName: fileNameSchema,
    sourceKind: z
      .enum(SOURCE_KINDS)
      .optional()
      .openapi({ description: "Must be url (the default) in the JSON form; upload bytes with multipart/form-data." }),
    url: hostedUrlSchema,
    size: int64(1).openapi({ description: "Bytes, > 0." }),
    sha256: z
      .string()
      .length(64)
      .regex(SHA256_HEX, "64 lowercase hex characters")
      .openapi({ description: "Lowercase hex." }),
    sha512: z
      .string()
      .length(88)
      .regex(SHA512_BASE64, "88 characters of standard base64")
      .openapi({ description: "Standard base64 (88 characters)." }),
    sha1: z
      .string()
      .length(40)
      .regex(/^[0-9a-f]{40}$/, "40 lowercase hex characters")
      .optional()
      .openapi({
        description:
          "Lowercase hex; Squirrel.Windows' RELEASES and Velopack's feed list a hosted package only when it has one.",
      }),
    signature: z.string().max(16_384).nullable().optional(),
  })
  .openapi("ReleaseDownloadHosted");

/** The plain fields of a multipart upload (CONTRACT section 7), checked before any byte is stored. */
export const UploadFields = z.object({
  platform: z.enum(PLATFORMS),
  kind: z.enum(KINDS),
  fileName: fileNameSchema,
  sourceKind: z.enum(UPLOAD_SOURCE_KINDS).default("local"),
  signature: z.string().max(16_384).optional(),
  ...declaredHashFields,
});
export type UploadFields = z.infer<typeof UploadFields>;

/** The body creating a resumable upload. */
export const UploadInput = z
  .object({
    platform: z.enum(PLATFORMS),
    kind: z.enum(KINDS),
    fileName: fileNameSchema,
    signature: z.string().max(16_384).nullable().optional(),
    ...declaredHashFields,
  })
  .openapi("ReleaseDownloadUpload");
