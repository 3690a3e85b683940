#!/usr/bin/env node
/**
 * `licensing-publish --url BASE --product CODE --dir dist/ [--dir …] [--format F] [--version 1.2.3] …`
 * (npm run publish-release -- …): publishes build output folders (electron-builder, Squirrel.Windows, Tauri, Sparkle,
 * Velopack; tools/publish/formats.ts) as a release (tools/publish/publish.ts).
 * The API key comes from LICENSING_API_KEY, the service's address from --url or LICENSING_URL (required: the tool
 * never guesses where to upload). The key is sent over https://, or plain http:// to this machine only (--insecure
 * allows another host), and never to another origin on a redirect; --ca FILE trusts a private or self-signed
 * certificate. Usage errors exit 2 with a message and the usage, failures exit 1 with the service's message (or what
 * kept the tool from reaching it, and the fix); neither prints a stack trace.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { serviceUrl } from "./api.ts";
import { PLATFORMS, type Platform } from "./dist.ts";
import { FORMATS, type Format } from "./formats.ts";
import { type SigningIdentities, parsePublisherNames, parseTeamIds, readTauriPublicKey } from "./identities.ts";
import { DEFAULT_PART_SIZE, DEFAULT_SINGLE_LIMIT, type PublishOptions, plan, publish } from "./publish.ts";
import {
  type ReleaseControl,
  parseHaltOnReports,
  parseHealthGate,
  parseRolloutSchedule,
  parseStagingPercentage,
  readNotesFile,
} from "./release-control.ts";

const USAGE = `Usage: licensing-publish --url BASE --product CODE --dir DIR [--dir DIR…] [options]

Publishes build output folders as a release of an application product, creating the release when it is missing;
safe to run again. Each folder is read as its tool writes it (--format, or recognised from its files):
  electron-builder   dist/: latest*.yml or beta*.yml…, the installers, zips and blockmaps they list (sha512 checked)
  squirrel-mac       dist/ of electron-builder's mac zip target: the macOS zips (Electron's autoUpdater on macOS)
  squirrel-windows   dist/squirrel-windows[-arm64]/ (or Squirrel's Releases): RELEASES, the newest -full.nupkg and
                     -delta.nupkg (SHA1 and size checked, SHA1 sent), the Setup .exe
  tauri              src-tauri/target/[<triple>/]release/bundle/: updater archives and installers with the .sig
                     beside them (sent as the signature), latest.json if there; refused without signatures
  sparkle            generate_appcast's folder (archives + appcast.xml with sparkle:edSignature), or a folder with
                     the archive and --sparkle-signature; refused without the EdDSA signature
  velopack           vpk pack's Releases/: releases.<channel>.json, the newest -full.nupkg and -delta.nupkg (SHA1,
                     SHA256 and size checked, SHA1 sent), Setup.exe/.pkg, Portable.zip, AppImage

Options:
  --url BASE              the licensing service (or LICENSING_URL); required. https://, or http:// to this
                          machine only (127.0.0.0/8, ::1, localhost)
  --ca FILE               also trust the certificates in FILE (PEM): the service's self-signed certificate or
                          the private authority that issued it (NODE_EXTRA_CA_CERTS works too)
  --insecure              allow http:// to another host: the API key crosses the network unencrypted
  --product CODE          the product's code; required
  --dir DIR               an output folder; required, and repeatable (one release from several tools' folders)
  --format F              the tool that wrote the folders: ${FORMATS.join(", ")}
                          (default: recognised per folder; electron-builder when nothing else matches)
  --sparkle-signature S   Sparkle's sign_update output for the archive in --dir: the line
                          sparkle:edSignature="…" length="…", the bare signature, or a file holding it
  --version 1.2.3         the release's version (default: the one the folder's metadata or file names give)
  --channel stable|insider  the channel of a new release (default: the update-info files' channel, latest*.yml
                          -> stable, beta*.yml and alpha*.yml -> insider; stable when there are none)
  --platform P            put every artifact on one platform: ${PLATFORMS.join(", ")}
  --public                make the release public once everything is uploaded
  --dry-run               print, per folder and format, what would be uploaded (file, platform, kind, size,
                          signature yes/no, declared SHA1) and the signer of each Windows or macOS build; with
                          LICENSING_API_KEY, whether the service will accept that signer (it only reads the
                          product's identities); without it, the service is not contacted
  --json                  print the result as JSON on stdout (progress goes to stderr)
  --single-limit BYTES    largest file sent in one request (default ${DEFAULT_SINGLE_LIMIT})
  --part-size BYTES       part size of resumable uploads, at least 5 MiB (default ${DEFAULT_PART_SIZE})
  -h, --help              this text

Release control, set on the release before the first upload (a new release or one already there; a value it has
already is not sent again):
  --staging-percentage N  the share of installs offered the release, 0-100 (by install id, else license)
  --rollout-schedule S    later rollout steps: PERCENT@INSTANT, comma-separated, each instant with its zone,
                          increasing and in the future: "25@2026-12-01T00:00:00Z,50@2026-12-03T00:00:00Z"
  --critical              installs below this release must update (required: true in the update check)
  --halt-on-reports C/M   halt the release when C different licenses report its version within M minutes (5/60)
  --health-gate G         halt it on its crash-free sessions: maxCrashRate=2%,ratio=2,minSessions=100,
                          minInstalls=20,action=halt|rollback (the lower bound of its crash rate above 2 %, or
                          above 2 x the previous release's; see docs/reference/release-control.md)
  --notes-file FILE       the release notes, Markdown, from FILE (instead of those the build output gives)

The product's signing identities, set on the product before the first upload (a value it has already is not sent
again), so the service refuses this run's builds signed by another (see docs/reference/artifacts.md); each given
replaces the product's, and --dry-run judges the builds against them:
  --windows-publisher-name NAME  the Authenticode certificate's subject CN, as electron-builder's publisherName;
                          repeatable (windowsPublisherNames)
  --mac-team-id ID        an Apple Team ID, 10 capital letters and digits (codesign -dv: TeamIdentifier=);
                          repeatable (macTeamIds)
  --tauri-public-key KEY  tauri.conf.json's pubkey, or a file holding it (tauri signer generate's .key.pub)

Environment: LICENSING_API_KEY (an Administrator's or LicenseManager's API key; required unless --dry-run),
LICENSING_URL, NODE_EXTRA_CA_CERTS. The key is never sent to another origin: a redirect elsewhere fails, naming its
target. Exit status: 0 done, 1 failed, 2 usage error.`;

function usageError(message: string): never {
  console.error(`licensing-publish: ${message}\n\n${USAGE}`);
  process.exit(2);
}

let parsed: ReturnType<typeof parse>;
function parse() {
  return parseArgs({
    options: {
      product: { type: "string" },
      version: { type: "string" },
      channel: { type: "string" },
      dir: { type: "string", multiple: true },
      format: { type: "string" },
      "sparkle-signature": { type: "string" },
      url: { type: "string" },
      ca: { type: "string" },
      insecure: { type: "boolean", default: false },
      platform: { type: "string" },
      public: { type: "boolean", default: false },
      "staging-percentage": { type: "string" },
      "rollout-schedule": { type: "string" },
      critical: { type: "boolean", default: false },
      "halt-on-reports": { type: "string" },
      "health-gate": { type: "string" },
      "notes-file": { type: "string" },
      "windows-publisher-name": { type: "string", multiple: true },
      "mac-team-id": { type: "string", multiple: true },
      "tauri-public-key": { type: "string" },
      "dry-run": { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      "single-limit": { type: "string", default: String(DEFAULT_SINGLE_LIMIT) },
      "part-size": { type: "string", default: String(DEFAULT_PART_SIZE) },
      help: { type: "boolean", short: "h", default: false },
    },
  });
}
try {
  parsed = parse();
} catch (e) {
  // Unknown options and missing values: a usage error, not a crash.
  usageError(e instanceof Error ? e.message : String(e));
}
const { values } = parsed;

if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
const url = values.url ?? process.env["LICENSING_URL"];
const apiKey = process.env["LICENSING_API_KEY"];
if (!url) usageError("--url (or LICENSING_URL) is required: the address of the licensing service");
try {
  serviceUrl(url, values.insecure, { url: "--url" });
} catch (e) {
  usageError(e instanceof Error ? e.message : String(e));
}
let ca: string | undefined;
if (values.ca !== undefined) {
  try {
    ca = readFileSync(values.ca, "utf8");
  } catch (e) {
    usageError(`--ca ${values.ca}: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!ca.includes("-----BEGIN CERTIFICATE-----"))
    usageError(`--ca ${values.ca} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
}
if (!values.product) usageError("--product is required");
if (!values.dir || values.dir.length === 0) usageError("--dir is required");
if (values.format !== undefined && !(FORMATS as readonly string[]).includes(values.format))
  usageError(`--format is one of ${FORMATS.join(", ")}`);
if (values.channel !== undefined && values.channel !== "stable" && values.channel !== "insider")
  usageError("--channel is stable or insider");
if (values.platform !== undefined && !(PLATFORMS as readonly string[]).includes(values.platform))
  usageError(`--platform is one of ${PLATFORMS.join(", ")}`);
const singleLimit = Number(values["single-limit"]);
const partSize = Number(values["part-size"]);
if (!Number.isSafeInteger(singleLimit) || singleLimit < 1) usageError("--single-limit is a number of bytes");
if (!Number.isSafeInteger(partSize) || partSize < 5 * 1024 * 1024)
  usageError("--part-size is a number of bytes, at least 5 MiB (5242880)");
// Release control and identities: every value checked before the folders are read or anything is sent
// (release-control.ts, identities.ts).
const control: ReleaseControl = {};
const identities: SigningIdentities = {};
try {
  if (values["staging-percentage"] !== undefined)
    control.stagingPercentage = parseStagingPercentage(values["staging-percentage"]);
  if (values["rollout-schedule"] !== undefined)
    control.rolloutSchedule = parseRolloutSchedule(values["rollout-schedule"]);
  if (values.critical) control.critical = true;
  if (values["halt-on-reports"] !== undefined) control.haltOnReports = parseHaltOnReports(values["halt-on-reports"]);
  if (values["health-gate"] !== undefined) control.healthGate = parseHealthGate(values["health-gate"]);
  if (values["notes-file"] !== undefined) control.releaseNotes = readNotesFile(values["notes-file"]);
  if (values["windows-publisher-name"])
    identities.windowsPublisherNames = parsePublisherNames(values["windows-publisher-name"]);
  if (values["mac-team-id"]) identities.macTeamIds = parseTeamIds(values["mac-team-id"]);
  if (values["tauri-public-key"] !== undefined)
    identities.tauriPublicKey = readTauriPublicKey(values["tauri-public-key"]);
} catch (e) {
  usageError(e instanceof Error ? e.message : String(e));
}
if (!apiKey && !values["dry-run"])
  usageError("set LICENSING_API_KEY to an API key of an Administrator or LicenseManager");

// With --json, stdout carries only the result.
const log = values.json ? (line: string) => console.error(line) : (line: string) => console.log(line);
const options: PublishOptions = {
  product: values.product,
  ...(values.version ? { version: values.version } : {}),
  ...(values.channel ? { channel: values.channel as "stable" | "insider" } : {}),
  dir: values.dir.length === 1 ? values.dir[0]! : values.dir,
  ...(values.format ? { format: values.format as Format } : {}),
  ...(values["sparkle-signature"] !== undefined ? { sparkleSignature: values["sparkle-signature"] } : {}),
  url,
  apiKey: apiKey ?? "",
  insecure: values.insecure,
  ...(ca ? { ca } : {}),
  ...(values.platform ? { platform: values.platform as Platform } : {}),
  makePublic: values.public,
  ...(Object.keys(control).length > 0 ? { control } : {}),
  ...(Object.keys(identities).length > 0 ? { identities } : {}),
  singleLimit,
  partSize,
  log,
  progress: !values.json && process.stderr.isTTY === true,
};

try {
  const result = values["dry-run"] ? await plan(options) : await publish(options);
  if (values.json) console.log(JSON.stringify(result, null, 2));
} catch (e) {
  console.error(`licensing-publish: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
