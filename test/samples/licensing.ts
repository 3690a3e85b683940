/** Sample requests for the licensing operations (REST) that applications call. */
import { encodeRequestCode } from "../../client/src/offline-codes";
import { admin } from "../helpers";
import { type Samples, created } from "./kit";
import { newProduct } from "./commerce";

/** A license of a mode, with its user key. */
export async function newLicense(
  mode: "File" | "Activation" | "Floating",
  maxClients = 0,
): Promise<{ id: number; licenseId: string; userKey: string }> {
  const res = await admin("POST", "/v1/licenses", {
    license: { productId: await newProduct(), licensingMode: mode, maxClients },
  });
  if (res.status !== 200) throw new Error(`license fixture: ${res.status} ${res.text}`);
  const list = await admin(
    "GET",
    `/v1/licenses?filter=${encodeURIComponent(`id == ${res.body["id"]}`)}&select=userKey`,
  );
  return { id: res.body["id"], licenseId: res.body["licenseId"], userKey: list.body["licenses"][0].userKey };
}

async function seat(): Promise<string> {
  const { userKey } = await newLicense("Floating");
  const res = await admin("POST", "/v1/license/request", { userKey, machineId: "m1", clientId: "c1" });
  if (res.status !== 200) throw new Error(`seat fixture: ${res.status} ${res.text}`);
  return res.body["licenseToken"];
}

export const licensingSamples: Samples = {
  "POST /v1/license/activate": async () => ({
    body: { userKey: (await newLicense("Activation")).userKey, machineId: "PC-1" },
  }),
  "POST /v1/license/deactivate": async () => {
    const { userKey } = await newLicense("Activation");
    await created("/v1/license/activate", { userKey, machineId: "PC-1" }, "licenseToken");
    return { body: { userKey, machineId: "PC-1" } };
  },
  "POST /v1/license/validate": async () => ({ body: { userKey: (await newLicense("File")).userKey } }),
  "POST /v1/license/request": async () => ({
    body: { userKey: (await newLicense("Floating")).userKey, machineId: "m1", clientId: "c1" },
  }),
  "POST /v1/license/heartbeat": async () => ({ body: { licenseToken: await seat() } }),
  "POST /v1/license/release": async () => ({ body: { licenseToken: await seat() } }),
  "POST /v1/license/checkout": async () => ({
    body: { userKey: (await newLicense("File")).userKey, machineId: "PC-1" },
  }),
  "POST /v1/license/borrow": async () => ({
    body: { userKey: (await newLicense("Floating")).userKey, machineId: "m1", clientId: "c1", hours: 2 },
  }),
  "POST /v1/license/return": async () => ({ body: { licenseToken: await seat() } }),
  "POST /v1/license/offline-activation": async () => ({
    body: {
      requestCode: encodeRequestCode({
        userKey: (await newLicense("Activation")).userKey,
        machineId: "AIR-1",
        nonce: crypto.randomUUID(),
      }),
    },
  }),
  "POST /v1/report": async () => ({
    body: { name: "ExceptionReport", content: "System.NullReferenceException at Main()" },
  }),
};
