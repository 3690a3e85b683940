/**
 * What the real Velopack client trusts (docs/development.md, "The Velopack client in development"): its native core
 * (ureq 2 over rustls with the webpki root list compiled in) reads no certificate file, so no local certificate can
 * serve it over HTTPS: here the service is served with a certificate signed by a local authority (as mkcert makes
 * one), SSL_CERT_FILE names that authority, and the client still refuses the connection as an unknown issuer. If a
 * later Velopack reads the file, this test fails and the docs' advice (plain HTTP in development) can change.
 * The client over plain HTTP is test/node/velopack.test.ts.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UpdateManager } from "velopack";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain JavaScript module shared with the benchmark
import { startLocalWorker } from "../../scripts/local-worker.mjs";

const dir = mkdtempSync(join(tmpdir(), "velopack-tls-"));
let worker: { url: URL; dispose(): Promise<void> };

/** A local authority and a server certificate for 127.0.0.1 it signed, with openssl. */
function localAuthority(): { key: string; cert: string; ca: string } {
  const file = (name: string) => join(dir, name);
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  const quiet = { stdio: "ignore" as const };
  execFileSync(
    "openssl",
    ["req", "-x509", ...ec, "-keyout", file("ca-key.pem"), "-out", file("ca.pem"), "-days", "2"]
      .concat(["-subj", "/CN=Local development authority"])
      .concat(["-addext", "basicConstraints=critical,CA:TRUE,pathlen:0"])
      .concat(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]),
    quiet,
  );
  execFileSync(
    "openssl",
    ["req", ...ec, "-keyout", file("key.pem"), "-out", file("server.csr"), "-subj", "/CN=127.0.0.1"],
    quiet,
  );
  writeFileSync(
    file("server.ext"),
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n",
  );
  execFileSync(
    "openssl",
    ["x509", "-req", "-in", file("server.csr"), "-CA", file("ca.pem"), "-CAkey", file("ca-key.pem")].concat([
      "-CAcreateserial",
      "-out",
      file("cert.pem"),
      "-days",
      "2",
      "-extfile",
      file("server.ext"),
    ]),
    quiet,
  );
  const read = (name: string) => readFileSync(file(name), "utf8");
  return { key: read("key.pem"), cert: read("cert.pem"), ca: file("ca.pem") };
}

beforeAll(async () => {
  const { key, cert, ca } = localAuthority();
  process.env["SSL_CERT_FILE"] = ca;
  worker = await startLocalWorker({
    bindings: {
      Application__JwtSecret: "velopack-tls-test-jwt-secret-0123456789",
      Application__EncryptionKey: "velopack-tls-test-encryption-key",
      Application__AdminUsername: "admin",
      Application__AdminPassword: "Velopack-12345",
      Application__AdminApiKey: "api_VelopackTlsAdminKey0000000000000",
    },
    https: { key, cert },
  });
}, 120_000);
afterAll(async () => {
  delete process.env["SSL_CERT_FILE"];
  await worker?.dispose();
});

describe("the Velopack client and a local certificate", () => {
  it("refuses the service over HTTPS signed by a local authority, even with SSL_CERT_FILE naming it", async () => {
    // Node trusts the authority it is given: the service answers over this HTTPS.
    const status = await new Promise<number | undefined>((resolve, reject) =>
      https
        .get(new URL("/health", worker.url).href, { ca: readFileSync(join(dir, "ca.pem")) }, (res) => {
          res.resume();
          resolve(res.statusCode);
        })
        .on("error", reject),
    );
    expect(status).toBe(200);
    const root = mkdtempSync(join(tmpdir(), "velopack-app-"));
    mkdirSync(join(root, "packages"));
    const manifest = join(root, "sq.version");
    writeFileSync(
      manifest,
      '<?xml version="1.0" encoding="utf-8"?><package xmlns="http://schemas.microsoft.com/packaging/2010/07/nuspec.xsd"><metadata><id>Studio</id><version>1.0.0</version><title>Studio</title><authors>Vendor</authors><description>Studio</description><channel>stable</channel><mainExe>Studio</mainExe></metadata></package>',
    );
    const manager = new UpdateManager(new URL("/v1/updates/studio/velopack/linux-x64", worker.url).href, undefined, {
      RootAppDir: root,
      UpdateExePath: join(root, "Update"),
      PackagesDir: join(root, "packages"),
      ManifestPath: manifest,
      CurrentBinaryDir: root,
      IsPortable: true,
    });
    await expect(manager.checkForUpdatesAsync()).rejects.toThrow(/invalid peer certificate: UnknownIssuer/);
  });
});
