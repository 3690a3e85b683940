/**
 * Sample requests for imports and the Keygen-compatible routes (CONTRACT 16): a dry run of a one-row CSV, reading an
 * import back, and an application's validate-key and machine calls against a license with a legacy key.
 */
import { setSetting } from "../helpers";
import { type Samples, created } from "./kit";

/** A dry run of a CSV naming a new product: harmless to the rest of the walk (it writes nothing but its record). */
async function dryRun() {
  const code = `imp-${crypto.randomUUID().slice(0, 8)}`;
  await created("/v1/products", { product: { code, name: "Imported" } }, "productId");
  return { source: "csv", dryRun: true, data: `legacyKey,product\nSAMPLE-KEY-${crypto.randomUUID()},${code}\n` };
}

const ACCOUNT = "sample-account";

/** The routes answer for the account, and a license with a legacy key: its key and `lic…` id. */
async function keygenLicense(): Promise<{ key: string; licenseId: string }> {
  await setSetting("Compat:Keygen:Account", ACCOUNT);
  const productId = await created(
    "/v1/products",
    { product: { code: `kg-${crypto.randomUUID().slice(0, 8)}`, name: "K" } },
    "productId",
  );
  const key = `KEYGEN-SAMPLE-${crypto.randomUUID()}`;
  const licenseId = await created(
    "/v1/licenses",
    { license: { productId, licensingMode: "Activation", maxClients: 0, legacyKey: key } },
    "licenseId",
  );
  return { key, licenseId: licenseId as string };
}

const machine = (licenseId: string, fingerprint = crypto.randomUUID()) => ({
  data: {
    type: "machines",
    attributes: { fingerprint },
    relationships: { license: { data: { type: "licenses", id: licenseId } } },
  },
});

export const importSamples: Samples = {
  "POST /v1/imports": async () => ({ body: await dryRun() }),
  "GET /v1/imports/{importId}": async () => {
    const data = await created("/v1/imports", await dryRun(), "data");
    return { path: `/v1/imports/${(data as { id: string }).id}` };
  },
  "POST /v1/accounts/{account}/licenses/actions/validate-key": async () => {
    const { key } = await keygenLicense();
    return { path: `/v1/accounts/${ACCOUNT}/licenses/actions/validate-key`, body: { meta: { key } } };
  },
  "POST /v1/accounts/{account}/machines": async () => {
    const { key, licenseId } = await keygenLicense();
    return {
      path: `/v1/accounts/${ACCOUNT}/machines`,
      body: machine(licenseId),
      headers: { authorization: `License ${key}` },
    };
  },
  "DELETE /v1/accounts/{account}/machines/{id}": async () => {
    const { key, licenseId } = await keygenLicense();
    const { exports } = await import("cloudflare:workers");
    const res = await exports.default.fetch(`https://licensing.test/v1/accounts/${ACCOUNT}/machines`, {
      method: "POST",
      headers: { "content-type": "application/vnd.api+json", authorization: `License ${key}` },
      body: JSON.stringify(machine(licenseId)),
    });
    const { data } = (await res.json()) as { data: { id: string } };
    return { path: `/v1/accounts/${ACCOUNT}/machines/${data.id}`, headers: { authorization: `License ${key}` } };
  },
};
