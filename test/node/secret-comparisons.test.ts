/**
 * The review of every place a secret is compared (DESIGN: comparisons are constant-time), kept honest. The source of
 * the service, the client library and the tools is scanned for `==`/`!=`/`===`/`!==` where an operand names a secret
 * (token, secret, password, HMAC, signature, digest, integrity); comparisons with a literal, `undefined`, `null` or a
 * type are not comparisons of secrets. What remains must be a reviewed comparison below, each with the reason it is
 * safe; a new one fails this test until it is made constant-time (src/kernel/crypto.ts `timingSafeEqual`) or
 * digest-indexed, or reviewed here. Runs in Node: it reads the source files.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { root } from "../../scripts/local-worker.mjs";

/** Reviewed comparisons: file, the comparison as written, and why a timing difference reveals nothing secret. */
const SIGNING_INSPECTORS =
  "a public value of the vendor's build, not a secret: the signing inspectors (src/updates/signing/, compiled into the publish CLI as tools/publish/signing/) compare structure fields and digests of files anyone can download";

const REVIEWED: { file: string; comparison: string; reason: string }[] = [
  {
    file: "src/updates/signing/macho.ts",
    comparison: "cd.codeLimit !== signatureOffset",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "src/updates/signing/macho.ts",
    comparison: "cd.nCodeSlots !== digests.length",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "src/updates/signing/macho.ts",
    comparison: "cmd === LC_CODE_SIGNATURE",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "src/updates/signing/minisign.ts",
    comparison: ".byteLength !== SIGNATURE_LENGTH",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "src/updates/signing/pe.ts",
    comparison: "h.algorithm === signature.digestAlgorithm",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "src/updates/signing/pe.ts",
    comparison: "digest.byteLength !== signature.digest.byteLength",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "src/updates/signing/pe.ts",
    comparison: "b !== signature.digest[i]",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "tools/publish/signing/macho.ts",
    comparison: "cd.codeLimit !== signatureOffset",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "tools/publish/signing/macho.ts",
    comparison: "cd.nCodeSlots !== digests.length",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "tools/publish/signing/macho.ts",
    comparison: "cmd === LC_CODE_SIGNATURE",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "tools/publish/signing/minisign.ts",
    comparison: ".byteLength !== SIGNATURE_LENGTH",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "tools/publish/signing/pe.ts",
    comparison: "h.algorithm === signature.digestAlgorithm",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "tools/publish/signing/pe.ts",
    comparison: "digest.byteLength !== signature.digest.byteLength",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "tools/publish/signing/pe.ts",
    comparison: "b !== signature.digest[i]",
    reason: SIGNING_INSPECTORS,
  },
  {
    file: "client/src/offline-codes.ts",
    comparison: "signature.length !== COMPACT_SIGNATURE_BYTES",
    reason:
      "an LRS2 response code's signature is checked for its fixed length (64 bytes) before WebCrypto verifies it; a length is public, the signature itself is only ever verified, never compared",
  },
  {
    file: "tools/publish/folders.ts",
    comparison: "actual !== digest",
    reason:
      "the publisher (on the vendor's machine) checks a file's digest against the one its build tool declared; both are public hashes of the vendor's own file, no secret",
  },
  {
    file: "tools/publish/publish.ts",
    comparison: "artifact.signature !== remote.signature",
    reason:
      "the publisher tells whether an updater signature (public: served in feeds) changed since the last upload, to update it in place; no secret",
  },
  {
    file: "src/auth/users.ts",
    comparison: 'row["passwordHash"] !== previous["passwordHash"]',
    reason:
      "two stored PBKDF2 hashes (the new one freshly salted) compared to tell whether a write changed the password, for the audit trail; no client input",
  },
  {
    file: "src/auth/bootstrap.ts",
    comparison: "done === signature",
    reason:
      "a fingerprint of the configured administrator, compared with the one this isolate already bootstrapped; no client input",
  },
  {
    file: "src/licensing/validation.ts",
    comparison: "t.tokenDigest === digest",
    reason:
      "SHA-256 digests of the presented token, among rows found by the digest index: timing reveals bits of a digest, not of a token",
  },
  {
    file: "src/auth/signing-keys.ts",
    comparison: "cache.secret !== secret",
    reason: "the configured Application:EncryptionKey against the one the key cache was built with; no client input",
  },
];

const SECRET_WORD = /(token|secret|password|passwd|hmac|signature|digest|integrity)/i;
const COMPARISON = /([\w$.[\]"'`]+)\s*(===|!==|==|!=)\s*([\w$.[\]"'`]+)/g;
/** Operands that make a comparison harmless: literals, undefined/null, numbers, enumerations, parser tokens. */
const HARMLESS = /^(undefined|null|true|false|-?\d+|["'`].*|typeof|TokenKind\.\w+|this\.token\.\w+|\w+\.kind)$/;

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "gen" && name !== "node_modules" && name !== "dist") yield* sources(path);
    } else if (/\.(ts|mjs)$/.test(name)) yield path;
  }
}

/** Every comparison in the source where an operand names a secret, as `file: comparison`. */
function secretComparisons(): string[] {
  const found: string[] = [];
  for (const dir of ["src", "client/src", "tools"]) {
    for (const path of sources(join(root, dir))) {
      const file = relative(root, path);
      for (const line of readFileSync(path, "utf8").split("\n")) {
        if (/^\s*(\/\/|\*|\/\*)/.test(line)) continue;
        for (const [, left = "", op, right = ""] of line.matchAll(COMPARISON)) {
          const sides = [left, right].map((s) => s.replace(/^[(!]+|[)]+$/g, ""));
          if (!sides.some((s) => SECRET_WORD.test(s)) || sides.some((s) => HARMLESS.test(s))) continue;
          if (/typeof\s+[\w$.[\]"']+\s*$/.test(line.slice(0, line.indexOf(`${left} ${op}`)))) continue;
          found.push(`${file}: ${sides[0]} ${op} ${sides[1]}`);
        }
      }
    }
  }
  return found;
}

describe("comparisons of secrets", () => {
  it("are all constant-time, digest-indexed or reviewed", () => {
    const reviewed = REVIEWED.map((r) => `${r.file}: ${r.comparison}`);
    const found = secretComparisons();
    expect(found.filter((c) => !reviewed.includes(c))).toEqual([]);
    // The review stays current: each reviewed comparison still exists.
    expect(reviewed.filter((r) => !found.includes(r))).toEqual([]);
  });
});
