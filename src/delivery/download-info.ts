/**
 * Where to download a release's file, as the update check and every feed hand it out (CONTRACT section 5): absolute
 * URLs on the download route, with a one-time token for a licensed caller of a gated release.
 */
import { z } from "@hono/zod-openapi";
import type { ServiceContext } from "../http/context";
import { int64 } from "../http/openapi";
import { type Caller, licenseOf } from "./caller";
import type { DownloadRow, Platform, ProductRow, ReleaseWithFiles } from "./catalog";
import { issueDownloadToken } from "./download-tokens";

/** Absolute URL of the download route for an artifact (tokenised when a token is given). */
export type DownloadUrl = (release: ReleaseWithFiles, file: DownloadRow, token?: string) => string;

/**
 * Absolute download URLs on this service at `origin` (CONTRACT section 5): tokenised when a token is given, otherwise
 * pinned to the artifact's id (`artifact`), so an artifact deleted and added again (new bytes, new id) has a new URL.
 * When another artifact of the release and platform has the same file name (an installer and a zip), the URL says
 * which with `kind`, as the download route asks (SPEC "Download": `kind` when one file name is ambiguous).
 */
export function downloadUrlFor(origin: string, product: Pick<ProductRow, "code">, platform: Platform): DownloadUrl {
  return (entry, file, token) => {
    const shared = entry.files.some((other) => other.id !== file.id && other.fileName === file.fileName);
    return `${origin}/v1/updates/${encodeURIComponent(product.code)}/download/${platform}/${encodeURIComponent(entry.release.version)}/${encodeURIComponent(file.fileName)}${token ? `?token=${token}` : `?artifact=${file.id}`}${shared ? `&kind=${file.kind}` : ""}`;
  };
}

/** Where to download a release's main file (CONTRACT section 5). */
export const DownloadInfo = z
  .object({
    fileName: z.string(),
    kind: z.string().openapi({ description: "The artifact's kind (installer, archive, …)." }),
    size: int64().openapi({ description: "Bytes." }),
    sha256: z.string().openapi({ description: "Hex SHA-256 of the file." }),
    sha512: z.string().openapi({ description: "Base64 SHA-512 of the file (electron-updater's hash)." }),
    url: z.string().openapi({
      description: "Absolute download URL; a release that needs maintenance carries a one-time token in it.",
    }),
  })
  .openapi("UpdateDownload");
export type DownloadInfo = z.infer<typeof DownloadInfo>;

/** The download of a release's main file; a gated release's URL carries a fresh token for a licensed caller. */
export async function downloadFor(
  ctx: ServiceContext,
  input: { caller: Caller; downloadUrl: DownloadUrl },
  entry: ReleaseWithFiles,
  file: DownloadRow,
): Promise<DownloadInfo> {
  const license = licenseOf(input.caller);
  const token =
    entry.release.requiresMaintenance && license ? await issueDownloadToken(ctx, file.id, license.id) : undefined;
  return {
    fileName: file.fileName,
    kind: file.kind,
    size: file.size,
    sha256: file.sha256,
    sha512: file.sha512,
    url: input.downloadUrl(entry, file, token),
  };
}
