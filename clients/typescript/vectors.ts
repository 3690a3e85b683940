/**
 * Runs every vector of clients/vectors/manifest.json through the TypeScript client package (client/src) and says
 * which disagree; exits 1 when one does. `npm run vectors` runs it after writing the folder; `npm run vectors --
 * --check` runs it alone. A vector's name given as an argument runs that one only.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type JwkSet, canonicalize, encodeRequestCode } from "../../client/src/index.ts";
import {
  type CheckParams,
  checkAirgapResponse,
  checkLicenseFile,
  checkUpdate,
  checkValidation,
  refusalOf,
} from "./lib.ts";

// Beside this file in the tree; from the compiled copy (clients/typescript/dist/…), the project root's.
const beside = fileURLToPath(new URL("../vectors/", import.meta.url));
const folder = existsSync(join(beside, "manifest.json")) ? beside : join(process.cwd(), "clients/vectors");

interface Vector {
  name: string;
  kind: string;
  files: Record<string, string>;
  params: Record<string, string>;
  expect: { ok: true; output: Record<string, unknown> } | { error: string };
}

const read = (path: string) => readFileSync(join(folder, path), "utf8");

function paramsOf(v: Vector): CheckParams {
  const p = v.params;
  return {
    ...p,
    ...(p["now"] !== undefined ? { now: new Date(p["now"]) } : {}),
    ...(p["lastSeen"] !== undefined ? { lastSeen: new Date(p["lastSeen"]) } : {}),
  } as CheckParams;
}

async function run(v: Vector): Promise<Record<string, unknown>> {
  const jwks = (): JwkSet => JSON.parse(read(v.files["jwks"] as string)) as JwkSet;
  const params = paramsOf(v);
  switch (v.kind) {
    case "jcs":
      return { canonical: canonicalize(JSON.parse(read(v.files["input"] as string))) };
    case "validation":
      return checkValidation(JSON.parse(read(v.files["answer"] as string)), jwks(), params);
    case "update-check":
      return checkUpdate(JSON.parse(read(v.files["answer"] as string)), jwks());
    case "license-file":
      return checkLicenseFile(read(v.files["file"] as string), jwks(), params);
    case "airgap-request": {
      const requestCode = encodeRequestCode(v.params as unknown as Parameters<typeof encodeRequestCode>[0]);
      return { requestCode };
    }
    case "airgap-response":
      return checkAirgapResponse(read(v.files["code"] as string), jwks(), {
        ...params,
        nonce: v.params["nonce"] ?? "",
      });
    default:
      throw new Error(`unknown kind ${v.kind}`);
  }
}

/** Whether a reported value is the expected one: instants compared as instants. */
function same(expected: unknown, actual: unknown): boolean {
  if (typeof expected === "string" && typeof actual === "string" && /^\d{4}-\d\d-\d\dT/.test(expected))
    return Date.parse(expected) === Date.parse(actual);
  return JSON.stringify(expected) === JSON.stringify(actual ?? null);
}

const manifest = JSON.parse(read("manifest.json")) as Vector[];
const only = process.argv.slice(2);
let failures = 0;
for (const v of manifest.filter((m) => only.length === 0 || only.includes(m.name))) {
  let verdict: string | undefined;
  try {
    const output = await run(v);
    if ("error" in v.expect) verdict = `accepted, expected refusal ${v.expect.error}`;
    else {
      const wrong = Object.entries(v.expect.output).filter(([key, value]) =>
        v.kind !== "airgap-request" || key === "requestCode" ? !same(value, output[key]) : false,
      );
      if (wrong.length > 0)
        verdict = wrong
          .map(([k, e]) => `${k}: expected ${JSON.stringify(e)}, got ${JSON.stringify(output[k])}`)
          .join("; ");
    }
  } catch (error) {
    const refusal = refusalOf(error);
    if (!("error" in v.expect)) verdict = `refused ${refusal.code}: ${refusal.message}`;
    else if (refusal.code !== v.expect.error)
      verdict = `refused ${refusal.code}, expected ${v.expect.error}: ${refusal.message}`;
  }
  if (verdict) {
    failures++;
    console.log(`FAIL ${v.name}: ${verdict}`);
  }
}
console.log(`vectors (typescript): ${manifest.length - failures} of ${manifest.length} agree`);
process.exit(failures ? 1 : 0);
