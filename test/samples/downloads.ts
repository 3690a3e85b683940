/** Sample requests for the release download routes, resumable uploads included (Administrator, LicenseManager). */
import { ADMIN, call } from "../helpers";
import { type Samples, created } from "./kit";

const unique = () => crypto.randomUUID().slice(0, 8);
const DOWNLOADS = "/v1/products/{productId}/releases/{releaseId}/downloads";

/** A release of a new application product (the only kind that takes downloads) and its downloads path. */
async function appRelease(): Promise<string> {
  const productId = await created(
    "/v1/products",
    { product: { code: `A${unique()}`, name: "App", isApplication: true } },
    "productId",
  );
  const releaseId = await created(
    `/v1/products/${productId}/releases`,
    { productRelease: { version: "1.0.0" } },
    "productReleaseId",
  );
  return `/v1/products/${productId}/releases/${releaseId}/downloads`;
}

const hosted = (kind = "installer") => ({
  releaseDownload: {
    platform: "win-x64",
    kind,
    fileName: `App.${kind}`,
    sourceKind: "url",
    url: "https://cdn.example.com/App.exe",
    size: 10,
    sha256: "0".repeat(64),
    sha512: `${"A".repeat(86)}==`,
  },
});

async function withDownload(): Promise<{ path: string; id: number }> {
  const path = await appRelease();
  return { path, id: await created(path, hosted(), "releaseDownloadId") };
}

/**
 * A resumable upload started with `key` (an upload belongs to the key that started it), with one (last, so small) part
 * when asked.
 */
async function withUpload(key = ADMIN.key, parts = 0): Promise<{ path: string; uploadId: string }> {
  const path = await appRelease();
  const started = await call("POST", `${path}/uploads`, {
    key,
    body: { upload: { platform: "linux-x64", kind: "installer", fileName: "App.AppImage" } },
  });
  if (started.status !== 201) throw new Error(`fixture upload: ${started.status} ${started.text}`);
  const uploadId = started.body["uploadId"] as string;
  if (parts > 0) {
    const res = await call("PUT", `${path}/uploads/${uploadId}/parts/1`, { key, body: "sample part bytes" });
    if (res.status !== 200) throw new Error(`fixture part: ${res.status} ${res.text}`);
  }
  return { path, uploadId };
}

export const downloadSamples: Samples = {
  [`GET ${DOWNLOADS}`]: async () => ({ path: (await withDownload()).path }),
  [`POST ${DOWNLOADS}`]: async () => ({ path: await appRelease(), body: hosted() }),
  [`PUT ${DOWNLOADS}`]: async () => {
    const d = await withDownload();
    return { path: d.path, body: { releaseDownload: { id: d.id, signature: "signed" } } };
  },
  [`DELETE ${DOWNLOADS}/{downloadId}`]: async () => {
    const d = await withDownload();
    return { path: `${d.path}/${d.id}` };
  },
  [`POST ${DOWNLOADS}/verify`]: async () => ({ path: `${(await withDownload()).path}/verify` }),
  [`POST ${DOWNLOADS}/uploads`]: async () => ({
    path: `${await appRelease()}/uploads`,
    body: { upload: { platform: "darwin-arm64", kind: "zip", fileName: "App.zip" } },
  }),
  [`PUT ${DOWNLOADS}/uploads/{uploadId}/parts/{partNumber}`]: async (key) => {
    const u = await withUpload(key);
    return { path: `${u.path}/uploads/${u.uploadId}/parts/1`, body: "part bytes" };
  },
  [`POST ${DOWNLOADS}/uploads/{uploadId}/complete`]: async (key) => {
    const u = await withUpload(key, 1);
    return { path: `${u.path}/uploads/${u.uploadId}/complete` };
  },
  [`DELETE ${DOWNLOADS}/uploads/{uploadId}`]: async (key) => {
    const u = await withUpload(key, 1);
    return { path: `${u.path}/uploads/${u.uploadId}` };
  },
};
