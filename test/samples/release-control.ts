/** Sample requests for release control (CONTRACT section 8): one release, its halt, resume, adoption and health. */
import { type Samples, created } from "./kit";
import { admin } from "../helpers";

const unique = () => crypto.randomUUID().slice(0, 8);

/** A public release (only a public release can be halted). */
async function publicRelease(): Promise<{ productId: number; releaseId: number }> {
  const productId = await created("/v1/products", { product: { code: `RC${unique()}`, name: "RC" } }, "productId");
  const releaseId = await created(
    `/v1/products/${productId}/releases`,
    { productRelease: { version: "1.0.0", public: true } },
    "productReleaseId",
  );
  return { productId: productId as number, releaseId: releaseId as number };
}

export const releaseControlSamples: Samples = {
  "GET /v1/products/{productId}/releases/{releaseId}": async () => {
    const r = await publicRelease();
    return { path: `/v1/products/${r.productId}/releases/${r.releaseId}` };
  },
  "POST /v1/products/{productId}/releases/{releaseId}/halt": async () => {
    const r = await publicRelease();
    return { path: `/v1/products/${r.productId}/releases/${r.releaseId}/halt`, body: { reason: "access sample" } };
  },
  "POST /v1/products/{productId}/releases/{releaseId}/resume": async () => {
    const r = await publicRelease();
    const halted = await admin("POST", `/v1/products/${r.productId}/releases/${r.releaseId}/halt`);
    if (halted.status !== 200) throw new Error(`fixture halt: ${halted.status} ${halted.text}`);
    return { path: `/v1/products/${r.productId}/releases/${r.releaseId}/resume` };
  },
  "GET /v1/products/{productId}/releases/{releaseId}/adoption": async () => {
    const r = await publicRelease();
    return { path: `/v1/products/${r.productId}/releases/${r.releaseId}/adoption` };
  },
  "GET /v1/products/{productId}/releases/{releaseId}/health": async () => {
    const r = await publicRelease();
    return { path: `/v1/products/${r.productId}/releases/${r.releaseId}/health` };
  },
};
