/** Sample requests for imports (CONTRACT 16): a dry run of a one-row CSV, and reading an import back. */
import { type Samples, created } from "./kit";

/** A dry run of a CSV naming a new product: harmless to the rest of the walk (it writes nothing but its record). */
async function dryRun() {
  const code = `imp-${crypto.randomUUID().slice(0, 8)}`;
  await created("/v1/products", { product: { code, name: "Imported" } }, "productId");
  return { source: "csv", dryRun: true, data: `legacyKey,product\nSAMPLE-KEY-${crypto.randomUUID()},${code}\n` };
}

export const importSamples: Samples = {
  "POST /v1/imports": async () => ({ body: await dryRun() }),
  "GET /v1/imports/{importId}": async () => {
    const data = await created("/v1/imports", await dryRun(), "data");
    return { path: `/v1/imports/${(data as { id: string }).id}` };
  },
};
