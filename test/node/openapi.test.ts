/**
 * The generated OpenAPI document, read from the bundled Worker as a client reads it: Spectral reports nothing on it
 * (ruleset .spectral.yaml), and every operation has typed request and response schemas (no untyped objects).
 * The wire types of @licensing/client (client/src/gen/openapi.ts) were generated from it as it is now.
 * Runs in Node (vitest.node.config.ts): Spectral is a Node program.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root, startLocalWorker } from "../../scripts/local-worker.mjs";
// @ts-expect-error: a plain JavaScript module, the generator's own check
import { checkGenerated } from "../../scripts/openapi-types.mjs";
import * as clientGenerated from "../../client/src/gen/openapi";
import * as consoleGenerated from "../../console/src/api/schema";
import { ENUMS } from "../../console/src/words";
import { ROLES } from "../../src/http/app-env";
import { OrderStatus, PaymentStatus } from "../../src/records/orders";
import {
  LICENSE_STATUSES,
  LICENSE_TYPES,
  LICENSING_MODES,
  TOKEN_KINDS,
  TRACE_ACTIONS,
} from "../../src/records/vocabulary";
import { LOG_LEVELS } from "../../src/db/logging";
import { WITHHELD_REASONS } from "../../src/delivery/update-check";

type Schema = {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  "x-enum-varnames"?: string[];
  description?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: unknown;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
};
type Operation = {
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
};
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

let worker: { url: URL; dispose(): Promise<void> };
let document: Document;
let file: string;

beforeAll(async () => {
  worker = await startLocalWorker();
  document = (await (await fetch(new URL("/swagger/v1/swagger.json", worker.url))).json()) as Document;
  file = join(mkdtempSync(join(tmpdir(), "openapi-")), "swagger.json");
  writeFileSync(file, JSON.stringify(document));
}, 120_000);
afterAll(() => worker?.dispose());

describe("the OpenAPI document", () => {
  it("has no Spectral findings (errors or warnings)", () => {
    const spectral = join(root, "node_modules/@stoplight/spectral-cli/dist/index.js");
    const run = spawnSync(
      process.execPath,
      [spectral, "lint", file, "--ruleset", join(root, ".spectral.yaml"), "--format", "json", "--quiet"],
      {
        encoding: "utf8",
        cwd: root,
      },
    );
    const findings = JSON.parse(run.stdout || "[]") as { code: string; message: string; path: string[] }[];
    expect(findings.map((f) => `${f.code} ${f.path.join(".")}: ${f.message}`)).toEqual([]);
  });

  it("is linted with the OWASP API Security rules, and every rule switched off says why", () => {
    const ruleset = readFileSync(join(root, ".spectral.yaml"), "utf8");
    expect(ruleset).toMatch(/^extends:\n(\s+- .+\n)*\s+- "@stoplight\/spectral-owasp-ruleset"$/m);
    const lines = ruleset.split("\n");
    const unexplained = lines.filter((line, i) => {
      if (!/^\s+\S+:\s*off\s*$/.test(line)) return false;
      // The comment block above a rule (or a run of rules switched off together) gives the reason.
      let j = i - 1;
      while (j >= 0 && /^\s+\S+:\s*off\s*$/.test(lines[j]!)) j--;
      return !/^\s*#/.test(lines[j] ?? "");
    });
    expect(unexplained).toEqual([]);
  });

  it("types every request and success response, with no untyped object", () => {
    const untyped: string[] = [];
    const walk = (schema: Schema | undefined, at: string): void => {
      if (!schema) {
        untyped.push(`${at}: no schema`);
        return;
      }
      if (schema.$ref) return;
      if (schema.type === "object" && !schema.properties && schema.additionalProperties === undefined)
        untyped.push(`${at}: untyped object`);
      for (const [k, v] of Object.entries(schema.properties ?? {})) walk(v, `${at}.${k}`);
      if (schema.items) walk(schema.items, `${at}[]`);
      for (const s of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) walk(s, at);
    };
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(item)) {
        for (const [type, media] of Object.entries(op.requestBody?.content ?? {}))
          walk(media.schema, `${method} ${path} body ${type}`);
        const success = Object.entries(op.responses).filter(([status]) => status.startsWith("2"));
        expect(success.length, `${method} ${path} documents no success response`).toBeGreaterThan(0);
        for (const [status, response] of success) {
          // 204 No Content has no body to type.
          if (status === "204") continue;
          const content = Object.entries(response.content ?? {});
          expect(content.length, `${method} ${path} ${status} has no content`).toBeGreaterThan(0);
          for (const [type, media] of content) walk(media.schema, `${method} ${path} ${status} ${type}`);
        }
      }
    }
    for (const [name, schema] of Object.entries(document.components.schemas))
      walk(schema, `#/components/schemas/${name}`);
    expect(untyped).toEqual([]);
  });
});

describe("the client's wire types", () => {
  it("were generated from the OpenAPI document the Worker serves now (else run `npm run client:schema`)", () => {
    const { file, committed, served } = checkGenerated("client", document);
    expect(committed, `${file} is out of date: run \`npm run client:schema\` and commit it`).toBe(served);
  });
});

/**
 * The service's enumerations (stored as numbers, the index of each name), by the document's component name, with the
 * console property that shows them. Taken from the service's own vocabulary, so a value added or renamed there must
 * reach the document and both generated modules, or this fails.
 */
const NAMED_ENUMS: Record<string, { names: readonly string[]; property?: string }> = {
  LicenseType: { names: LICENSE_TYPES, property: "licenseType" },
  LicensingMode: { names: LICENSING_MODES, property: "licensingMode" },
  TokenKind: { names: TOKEN_KINDS, property: "kind" },
  TraceAction: { names: TRACE_ACTIONS, property: "action" },
  LogLevel: { names: LOG_LEVELS, property: "level" },
  OrderStatus: { names: OrderStatus, property: "status" },
  PaymentStatus: { names: PaymentStatus, property: "paymentStatus" },
};

/** openapi-typescript's `--enum-values` name of a component's value array: `LicenseTypeName` -> `licenseTypeNameValues`. */
const valuesOf = (module: Record<string, unknown>, component: string): unknown =>
  module[`${component.charAt(0).toLowerCase()}${component.slice(1)}Values`];

describe("named enumerations", () => {
  it("are components of the document: the numbers (x-enum-varnames naming each) and the names, in the service's order", () => {
    const schemas = document.components.schemas;
    for (const [id, { names }] of Object.entries(NAMED_ENUMS)) {
      expect(schemas[id]?.enum, id).toEqual(names.map((_, i) => i));
      expect(schemas[id]?.["x-enum-varnames"], id).toEqual([...names]);
      expect(schemas[`${id}Name`]?.enum, `${id}Name`).toEqual([...names]);
    }
    expect(schemas["RoleName"]?.enum).toEqual([...ROLES]);
    expect(schemas["LicenseStatusName"]?.enum).toEqual([...LICENSE_STATUSES]);
    // No enumeration is left as numbers explained only in words ("0 = …, 1 = …") outside its named component.
    const others = Object.fromEntries(Object.entries(schemas).filter(([name]) => !(name in NAMED_ENUMS)));
    expect(JSON.stringify({ paths: document.paths, others })).not.toMatch(/"0 = [A-Z]\w*, 1 = /);
  });

  it("reach the console and the client through the generated modules, equal to the service's vocabulary", () => {
    const inConsole = consoleGenerated as unknown as Record<string, unknown>;
    const client = clientGenerated as unknown as Record<string, unknown>;
    for (const [id, { names, property }] of Object.entries(NAMED_ENUMS)) {
      expect(valuesOf(inConsole, id), id).toEqual(names.map((_, i) => i));
      expect(valuesOf(inConsole, `${id}Name`), `${id}Name`).toEqual([...names]);
      if (property) expect(ENUMS[property], property).toEqual([...names]);
    }
    expect(valuesOf(inConsole, "RoleName")).toEqual([...ROLES]);
    // The client's licensing operations carry these (wire.ts and updates.ts read them from the generated module).
    for (const id of ["LicenseType", "LicensingMode"])
      expect(valuesOf(client, `${id}Name`), id).toEqual([...NAMED_ENUMS[id]!.names]);
    expect(valuesOf(client, "LicenseStatusName")).toEqual([...LICENSE_STATUSES]);
    expect(valuesOf(client, "UpdateCheckDataWithheldReason")).toEqual([...WITHHELD_REASONS]);
  });
});
