#!/usr/bin/env node
/**
 * `licensing-publish --product CODE --version 1.2.3 --channel stable --dir dist/ [--url BASE] [--platform P]`
 * (npm run publish-release -- …): publishes an electron-builder output folder as a release (tools/publish/publish.ts).
 * The API key comes from LICENSING_API_KEY, the service's address from --url or LICENSING_URL. Node 22.18+ runs
 * this TypeScript directly; only Node's built-ins and fetch are used.
 */
import { parseArgs } from "node:util";
import { PLATFORMS, type Platform } from "./dist.ts";
import { DEFAULT_PART_SIZE, DEFAULT_SINGLE_LIMIT, publish } from "./publish.ts";

const USAGE = `Usage: licensing-publish --product CODE [--version 1.2.3] [--channel stable|insider] --dir DIST
                         [--url BASE] [--platform ${PLATFORMS.join("|")}] [--public]
                         [--single-limit BYTES] [--part-size BYTES]
Environment: LICENSING_API_KEY (required), LICENSING_URL (default https://127.0.0.1:5000)`;

function fail(message: string): never {
  console.error(`licensing-publish: ${message}\n\n${USAGE}`);
  process.exit(2);
}

const { values } = parseArgs({
  options: {
    product: { type: "string" },
    version: { type: "string" },
    channel: { type: "string", default: "stable" },
    dir: { type: "string" },
    url: { type: "string", default: process.env["LICENSING_URL"] ?? "https://127.0.0.1:5000" },
    platform: { type: "string" },
    public: { type: "boolean", default: false },
    "single-limit": { type: "string", default: String(DEFAULT_SINGLE_LIMIT) },
    "part-size": { type: "string", default: String(DEFAULT_PART_SIZE) },
    help: { type: "boolean", default: false },
  },
});

if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const apiKey = process.env["LICENSING_API_KEY"];
if (!apiKey) fail("set LICENSING_API_KEY to an API key of an Administrator or LicenseManager");
if (!values.product) fail("--product is required");
if (!values.dir) fail("--dir is required");
if (values.channel !== "stable" && values.channel !== "insider") fail("--channel is stable or insider");
if (values.platform !== undefined && !(PLATFORMS as readonly string[]).includes(values.platform)) fail(`--platform is one of ${PLATFORMS.join(", ")}`);

try {
  await publish({
    product: values.product,
    ...(values.version ? { version: values.version } : {}),
    channel: values.channel,
    dir: values.dir,
    url: values.url,
    apiKey,
    ...(values.platform ? { platform: values.platform as Platform } : {}),
    makePublic: values.public,
    singleLimit: Number(values["single-limit"]),
    partSize: Number(values["part-size"]),
  });
} catch (e) {
  console.error(`licensing-publish: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
