// The local HTTPS certificate of `npm run dev` (and of `npm run tour`): self-signed, for 127.0.0.1 and localhost
// (and HOST when it names another address), made with the openssl command once and kept in `.wrangler/dev-cert/`.
//
// It is its own trust anchor and not an authority (basicConstraints CA:FALSE): a tool told to trust it
// (`curl --cacert`, `NODE_EXTRA_CA_CERTS`, licensing-publish `--ca`, the client's `trustingFetch({ ca })`) trusts
// this one certificate for these names, nothing it could sign. Its key is readable by its owner only.
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";

/** The names a certificate for `host` covers: the loopback names, and `host` itself unless it is a wildcard. */
export function certificateNames(host = "127.0.0.1") {
  const names = ["IP:127.0.0.1", "DNS:localhost"];
  if (host !== "0.0.0.0" && host !== "::" && !names.includes(`IP:${host}`) && host !== "localhost") {
    names.push(isIP(host) ? `IP:${host}` : `DNS:${host}`);
  }
  return names;
}

/** Whether the certificate in `file` is still valid a day from now (openssl x509 -checkend). */
function validForADay(file) {
  try {
    execFileSync("openssl", ["x509", "-in", file, "-noout", "-checkend", "86400"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/**
 * The certificate and key in `dir` for `host`, made when missing, expiring within a day, or made for other names.
 * Returns the paths (`certFile` is what the tools trust) and whether it was made now.
 */
export function localCertificate(dir, host) {
  const certFile = join(dir, "cert.pem");
  const keyFile = join(dir, "key.pem");
  const namesFile = join(dir, "names.txt");
  const names = certificateNames(host).join(",");
  const current =
    existsSync(certFile) &&
    existsSync(keyFile) &&
    existsSync(namesFile) &&
    readFileSync(namesFile, "utf8").trim() === names &&
    validForADay(certFile);
  if (current) return { certFile, keyFile, created: false };
  mkdirSync(dir, { recursive: true });
  rmSync(keyFile, { force: true });
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      keyFile,
      "-out",
      certFile,
      "-days",
      "365",
      "-subj",
      "/CN=licensing-service local (npm run dev)",
      "-addext",
      `subjectAltName=${names}`,
      "-addext",
      "basicConstraints=critical,CA:FALSE",
      "-addext",
      "extendedKeyUsage=serverAuth",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  chmodSync(keyFile, 0o600);
  writeFileSync(namesFile, `${names}\n`);
  return { certFile, keyFile, created: true };
}
