/** Sample requests for the update routes (anonymous) and their keys. */
import { exports } from "cloudflare:workers";
import { ADMIN, BASE, admin } from "../helpers";
import { blockmapOf } from "../artifacts-kit";
import type { Samples } from "./kit";

/**
 * An application product with a public release 1.0.0 holding a win-x64 installer and its blockmap (the blockmap is
 * served without a token).
 */
async function product(): Promise<string> {
  const code = `app${crypto.randomUUID().slice(0, 8)}`;
  const productId = (await admin("POST", "/v1/products", { product: { code, name: "App", isApplication: true } })).body[
    "productId"
  ];
  const releaseId = (
    await admin("POST", `/v1/products/${productId}/releases`, { productRelease: { version: "1.0.0", public: true } })
  ).body["productReleaseId"];
  const installer = new Uint8Array([1, 2, 3]);
  for (const [kind, bytes, fileName] of [
    ["installer", installer, "App Setup 1.0.0.exe"],
    ["blockmap", await blockmapOf(installer), "App Setup 1.0.0.exe.blockmap"],
  ] as const) {
    const form = new FormData();
    form.set("platform", "win-x64");
    form.set("kind", kind);
    form.set("file", new Blob([bytes]), fileName);
    const res = await exports.default.fetch(`${BASE}/v1/products/${productId}/releases/${releaseId}/downloads`, {
      method: "POST",
      headers: { "x-api-key": ADMIN.key },
      body: form,
    });
    if (res.status !== 201) throw new Error(`sample artifact: ${res.status} ${await res.text()}`);
  }
  return code;
}

export const updateSamples: Samples = {
  "GET /v1/extensions/keys": async () => ({}),
  "GET /v1/updates/{productCode}": async () => ({
    path: `/v1/updates/${await product()}?platform=win-x64&version=0.9.0`,
  }),
  // Release health (CONTRACT section 13): one exited session of the install.
  "POST /v1/updates/{productCode}/sessions": async () => ({
    path: `/v1/updates/${await product()}/sessions`,
    headers: { "X-Service-Install-Id": `sample-${crypto.randomUUID()}` },
    body: {
      version: "1.0.0",
      platform: "win-x64",
      sessions: [{ id: crypto.randomUUID(), status: "exited", startedAt: new Date().toISOString(), durationMs: 1000 }],
    },
  }),
  "GET /v1/updates/{productCode}/feed/{channel}/{platform}/{file}": async () => ({
    path: `/v1/updates/${await product()}/feed/stable/win-x64/latest.yml`,
  }),
  "GET /v1/updates/{productCode}/latest.yml": async () => ({ path: `/v1/updates/${await product()}/latest.yml` }),
  "GET /v1/updates/{productCode}/latest-mac.yml": async () => ({
    path: `/v1/updates/${await product()}/latest-mac.yml`,
  }),
  "GET /v1/updates/{productCode}/latest-linux.yml": async () => ({
    path: `/v1/updates/${await product()}/latest-linux.yml`,
  }),
  "GET /v1/updates/{productCode}/latest-linux-arm64.yml": async () => ({
    path: `/v1/updates/${await product()}/latest-linux-arm64.yml`,
  }),
  "GET /v1/updates/{productCode}/download/{platform}/{version}/{fileName}": async () => ({
    path: `/v1/updates/${await product()}/download/win-x64/1.0.0/App%20Setup%201.0.0.exe.blockmap`,
  }),
  // Issue 27's formats (the sample release has no signed or macOS artifact: their "no update" answers).
  "GET /v1/updates/{productCode}/tauri/{target}/{arch}/{currentVersion}": async () => ({
    path: `/v1/updates/${await product()}/tauri/windows/x86_64/0.9.0`,
  }),
  "GET /v1/updates/{productCode}/tauri.json": async () => ({ path: `/v1/updates/${await product()}/tauri.json` }),
  "GET /v1/updates/{productCode}/squirrel-mac/{platform}/{currentVersion}": async () => ({
    path: `/v1/updates/${await product()}/squirrel-mac/darwin-arm64/0.9.0`,
  }),
  "GET /v1/updates/{productCode}/appcast.xml": async () => ({ path: `/v1/updates/${await product()}/appcast.xml` }),
  // Squirrel.Windows and Velopack (the sample release has no package: their "no update" answers).
  "GET /v1/updates/{productCode}/squirrel-win/{platform}/{file}": async () => ({
    path: `/v1/updates/${await product()}/squirrel-win/win-x64/RELEASES?localVersion=0.9.0`,
  }),
  "GET /v1/updates/{productCode}/velopack/{platform}/{file}": async () => ({
    path: `/v1/updates/${await product()}/velopack/win-x64/releases.stable.json?localVersion=0.9.0`,
  }),
  "GET /v1/updates/{productCode}/velopack/{platform}/feed/{feed}/{file}": async () => ({
    path: `/v1/updates/${await product()}/velopack/win-x64/feed/0.none/releases.stable.json?localVersion=0.9.0`,
  }),
};
