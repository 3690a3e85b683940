/**
 * Release versions: `major.minor.patch` with an optional `-prerelease` (SemVer 2 precedence), the form a release
 * needs to receive downloads and the form update checks compare.
 */
const VERSION =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-.]+)?$/;

export interface Version {
  major: number;
  minor: number;
  patch: number;
  prerelease: string[];
}

/** The parsed version, or undefined when the text is not `major.minor.patch[-prerelease]`. */
export function parseVersion(text: string): Version | undefined {
  const m = VERSION.exec(text.trim());
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), prerelease: m[4] ? m[4].split(".") : [] };
}

/** Longest version text: what a release's `version` may hold (records/releases.ts). */
export const MAX_VERSION_LENGTH = 64;

export function isReleaseVersion(text: string): boolean {
  return text.length <= MAX_VERSION_LENGTH && parseVersion(text) !== undefined;
}

function compareIdentifiers(a: string, b: string): number {
  const an = /^\d+$/.test(a);
  const bn = /^\d+$/.test(b);
  if (an && bn) return Number(a) - Number(b);
  if (an) return -1;
  if (bn) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** SemVer precedence: negative when a < b, 0 when equal, positive when a > b; unparsable versions sort first. */
export function compareVersions(a: string, b: string): number {
  const x = parseVersion(a);
  const y = parseVersion(b);
  if (!x || !y) return x ? 1 : y ? -1 : 0;
  for (const key of ["major", "minor", "patch"] as const) if (x[key] !== y[key]) return x[key] - y[key];
  if (x.prerelease.length === 0 || y.prerelease.length === 0) return y.prerelease.length - x.prerelease.length;
  for (let i = 0; i < Math.max(x.prerelease.length, y.prerelease.length); i++) {
    const p = x.prerelease[i];
    const q = y.prerelease[i];
    if (p === undefined) return -1;
    if (q === undefined) return 1;
    const c = compareIdentifiers(p, q);
    if (c !== 0) return c;
  }
  return 0;
}
