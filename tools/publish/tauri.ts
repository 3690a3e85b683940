/**
 * Reading `tauri build`'s bundle folder (src-tauri/target[/<triple>]/release/bundle): one subfolder per bundle type
 * (macos, dmg, nsis, msi, appimage, deb, rpm). The updater's artifacts carry a minisign signature in a `.sig` file
 * beside them (bundle.createUpdaterArtifacts with TAURI_SIGNING_PRIVATE_KEY set):
 *
 * - Tauri v2 (`createUpdaterArtifacts: true`): the installers themselves are signed (`nsis/X_1.0.0_x64-setup.exe.sig`,
 *   `msi/X_1.0.0_x64_en-US.msi.sig`, `appimage/x_1.0.0_amd64.AppImage.sig`), macOS gets `macos/X.app.tar.gz(.sig)`;
 * - v1 compatible (`createUpdaterArtifacts: "v1Compatible"`, and Tauri 1): archives `nsis/…-setup.nsis.zip`,
 *   `msi/….msi.zip`, `appimage/….AppImage.tar.gz`, `macos/X.app.tar.gz`, each with its `.sig`.
 *
 * Archives become `archive` artifacts, installers `installer` ones; the `.sig` text goes to the service untouched as
 * the artifact's signature. Tauri's updater refuses an unsigned update, so an archive without its `.sig`, a `.sig`
 * that is not minisign's or signs another file, or a folder with no signed updater artifact is refused before
 * anything is sent. A `latest.json` (tauri-action's static manifest) in the folder gives the version, notes and date,
 * and each file it names must be there with the signature it gives.
 */
import { readFile, stat } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import type { Artifact, Dist, Kind, Platform } from "./dist.ts";
import { archIn, entries, isSemver, oneVersion, platformOf, type ReadOptions, versionIn } from "./read-kit.ts";

/** The bundle folders of tauri-bundler (one per bundle type). */
export const TAURI_BUNDLE_FOLDERS = ["macos", "dmg", "nsis", "msi", "appimage", "deb", "rpm"];

type Family = "win" | "darwin" | "linux";

/** What each bundle folder holds that the service can serve, in order of preference within a platform and kind. */
const BUNDLE_FILES: { folder: string; suffix: string; family: Family; kind: Kind }[] = [
  { folder: "macos", suffix: ".app.tar.gz", family: "darwin", kind: "archive" },
  { folder: "dmg", suffix: ".dmg", family: "darwin", kind: "installer" },
  { folder: "nsis", suffix: ".nsis.zip", family: "win", kind: "archive" },
  { folder: "nsis", suffix: "-setup.exe", family: "win", kind: "installer" },
  { folder: "msi", suffix: ".msi.zip", family: "win", kind: "archive" },
  { folder: "msi", suffix: ".msi", family: "win", kind: "installer" },
  { folder: "appimage", suffix: ".AppImage.tar.gz", family: "linux", kind: "archive" },
  { folder: "appimage", suffix: ".AppImage", family: "linux", kind: "installer" },
  { folder: "deb", suffix: ".deb", family: "linux", kind: "installer" },
  { folder: "rpm", suffix: ".rpm", family: "linux", kind: "installer" },
];

/** tauri-action's latest.json (Tauri's static update manifest). */
interface LatestJson {
  version?: string;
  notes?: string;
  pub_date?: string;
  platforms?: Record<string, { url?: string; signature?: string }>;
}

/**
 * Why a `.sig` text is not minisign's signature of `fileName`, or undefined when it is: the base64 of four lines
 * (untrusted comment, the Ed25519 signature with its key id, the trusted comment, the global signature), the trusted
 * comment naming the file Tauri signed (`timestamp:…\tfile:NAME`).
 */
export function minisignProblem(signature: string, fileName: string): string | undefined {
  let text: string;
  try {
    text = Buffer.from(signature.trim(), "base64").toString("utf8");
  } catch {
    return "is not base64";
  }
  const lines = text.split("\n");
  const bytes = (line: string | undefined) => Buffer.from(line ?? "", "base64").byteLength;
  if (!lines[0]?.startsWith("untrusted comment:") || !lines[2]?.startsWith("trusted comment:"))
    return "is not a minisign signature (the base64 of its comment and signature lines)";
  if (bytes(lines[1]) !== 74 || bytes(lines[3]) !== 64) return "holds a minisign signature of the wrong length";
  const signed = /(?:^|[\t ])file:([^\t]*)/.exec(lines[2].slice("trusted comment:".length))?.[1]?.trim();
  if (signed !== undefined && signed !== fileName) return `signs ${signed}, not ${fileName}`;
  return undefined;
}

/** The bundle folder: `dir` itself, or its `bundle` subfolder (target/release). */
async function bundleFolder(dir: string): Promise<string> {
  const { folders } = await entries(dir);
  return folders.includes("bundle") && !folders.some((f) => TAURI_BUNDLE_FOLDERS.includes(f))
    ? join(dir, "bundle")
    : dir;
}

export async function readTauri(dir: string, options: ReadOptions): Promise<Dist> {
  const root = await bundleFolder(dir);
  const { files: topFiles, folders } = await entries(root);
  const latest: LatestJson | undefined = topFiles.includes("latest.json")
    ? (JSON.parse(await readFile(join(root, "latest.json"), "utf8")) as LatestJson)
    : undefined;
  // The target triple in the path (target/aarch64-apple-darwin/release/bundle) names the architecture of files that
  // do not (macos/X.app.tar.gz).
  const triple = /\/target\/([a-z0-9_]+)-[a-z0-9_-]+\/release\//.exec(`${resolve(root)}/`)?.[1];
  const skipped: Dist["skipped"] = [];
  type Candidate = Omit<Artifact, "platform"> & { platform: Platform | undefined; rank: number; folder: string };
  const candidates: Candidate[] = [];
  const versions: { fileName: string; version: string }[] = [];
  const unsigned: string[] = [];
  for (const folder of folders) {
    if (!TAURI_BUNDLE_FOLDERS.includes(folder)) continue;
    const { files } = await entries(join(root, folder));
    const signatures = new Set(files.filter((f) => f.endsWith(".sig")));
    for (const fileName of files) {
      if (fileName.endsWith(".sig")) {
        if (!files.includes(fileName.slice(0, -4)))
          skipped.push({ fileName: `${folder}/${fileName}`, reason: "the file it signs is not beside it" });
        continue;
      }
      const rank = BUNDLE_FILES.findIndex((b) => b.folder === folder && fileName.endsWith(b.suffix));
      const shape = BUNDLE_FILES[rank];
      if (!shape) {
        skipped.push({
          fileName: `${folder}/${fileName}`,
          reason: `not a ${folder} bundle the updater or a user installs`,
        });
        continue;
      }
      const path = join(root, folder, fileName);
      const version = versionIn(fileName);
      if (version) versions.push({ fileName, version });
      let signature: string | undefined;
      if (signatures.has(`${fileName}.sig`)) {
        signature = (await readFile(`${path}.sig`, "utf8")).trim();
        const problem = minisignProblem(signature, fileName);
        if (problem)
          throw new Error(
            `${folder}/${fileName}.sig ${problem}: Tauri's updater would refuse it; rebuild with TAURI_SIGNING_PRIVATE_KEY set`,
          );
      } else if (shape.kind === "archive") unsigned.push(`${folder}/${fileName}`);
      // The architecture: the file name's, else the target triple's, else the dmg's beside a macOS archive.
      const arch = archIn(fileName) ?? (triple ? archIn(triple) : undefined);
      const platform: Platform | { reason: string } | undefined = options.platform
        ? options.platform
        : arch
          ? platformOf(shape.family, arch)
          : undefined;
      if (platform !== undefined && typeof platform !== "string") {
        skipped.push({ fileName: `${folder}/${fileName}`, reason: platform.reason });
        continue;
      }
      candidates.push({
        path,
        fileName,
        folder,
        platform,
        kind: shape.kind,
        size: (await stat(path)).size,
        rank,
        ...(signature !== undefined ? { signature } : {}),
      });
    }
  }
  if (unsigned.length > 0)
    throw new Error(
      `${unsigned.join(", ")}: no .sig beside ${unsigned.length > 1 ? "them" : "it"}; Tauri's updater refuses unsigned updates, so nothing was published. Build with TAURI_SIGNING_PRIVATE_KEY (and TAURI_SIGNING_PRIVATE_KEY_PASSWORD) set, and publish the whole bundle folder`,
    );
  // A macOS archive without an architecture in its name or path takes the dmg's.
  for (const c of candidates.filter((c) => c.platform === undefined)) {
    const dmg = candidates.find((d) => d.folder === "dmg" && d.platform !== undefined);
    if (dmg && c.folder === "macos") c.platform = dmg.platform;
    else {
      skipped.push({
        fileName: `${c.folder}/${c.fileName}`,
        reason: "its architecture is unknown (no arch in its name or the target folder): pass --platform",
      });
      candidates.splice(candidates.indexOf(c), 1);
    }
  }

  // latest.json, when there: every file it names is here, with the signature it gives.
  if (latest?.platforms) {
    for (const [key, entry] of Object.entries(latest.platforms)) {
      const name = decodeURIComponent(basename(new URL(entry.url ?? "", "https://x/").pathname));
      const found = candidates.find((c) => c.fileName === name);
      if (!found)
        throw new Error(
          `latest.json names ${name} for ${key}, which is not in ${root}; publish the whole bundle folder`,
        );
      if (found.signature === undefined && entry.signature) {
        const problem = minisignProblem(entry.signature, name);
        if (problem) throw new Error(`latest.json's signature of ${name} ${problem}`);
        found.signature = entry.signature.trim();
      } else if (entry.signature && entry.signature.trim() !== found.signature)
        throw new Error(
          `latest.json gives ${name} another signature than ${found.folder}/${name}.sig: the folder mixes builds; rebuild it`,
        );
    }
  }

  // One artifact per platform and kind: signed ones first, then the bundle order above (NSIS before MSI, AppImage
  // before deb and rpm).
  candidates.sort((a, b) => Number(b.signature !== undefined) - Number(a.signature !== undefined) || a.rank - b.rank);
  const chosen = new Map<string, Artifact>();
  for (const { rank: _rank, folder, platform, ...rest } of candidates) {
    if (platform === undefined) continue;
    const c: Artifact = { ...rest, platform };
    const slot = `${c.platform}/${c.kind}`;
    const winner = chosen.get(slot);
    if (winner)
      skipped.push({
        fileName: `${folder}/${c.fileName}`,
        reason: `one ${c.kind} per platform: ${winner.fileName} is the ${c.platform} ${c.kind}`,
      });
    else chosen.set(slot, c);
  }
  const artifacts = [...chosen.values()];
  if (!artifacts.some((a) => a.signature !== undefined))
    throw new Error(
      `${root} holds no signed updater artifact (a .sig beside an archive or installer): Tauri's updater refuses unsigned updates. Set bundle.createUpdaterArtifacts to true and TAURI_SIGNING_PRIVATE_KEY, then run tauri build again`,
    );

  const named = latest?.version?.replace(/^v/, "");
  const fromNames = oneVersion(root, versions);
  if (named && fromNames && named !== fromNames)
    throw new Error(
      `${root}: latest.json is version ${named} but the bundles are ${fromNames}; publish one build's output`,
    );
  const version = named ?? fromNames ?? options.version;
  if (version !== undefined && !isSemver(version))
    throw new Error(`${root}: version ${version} is not a semantic version; pass --version`);
  return {
    ...(version ? { version } : {}),
    ...(latest?.notes ? { releaseNotes: latest.notes } : {}),
    ...(latest?.pub_date ? { releaseDate: new Date(latest.pub_date).toISOString() } : {}),
    updateInfoFiles: [],
    listed: [],
    artifacts,
    skipped,
  };
}
