/**
 * Which webhook URLs the service calls (CONTRACT section 6; DESIGN: checked on create, update and each delivery).
 * https only, no credentials in the URL, and no host that is, or is spelled as, an address the service must never
 * reach: private, loopback, link-local (cloud metadata at 169.254.169.254), CGNAT, multicast, unspecified or
 * reserved. `Webhooks:AllowInsecureUrls` (local development) lifts the https and address rules, never the
 * credentials rule.
 *
 * The check works on the host as the WHATWG URL parser normalises it, which is also what `fetch` connects to: the
 * parser turns `0x7f.1`, `2130706433`, `0177.0.0.1` and `127.1` into `127.0.0.1`, and writes IPv6 compressed and
 * lower case (`[::ffff:127.0.0.1]` becomes `[::ffff:7f00:1]`), so each spelling meets the same range table.
 * Names are not resolved: a Worker has no DNS lookup before `fetch`, so a public name whose DNS answer is a private
 * address is not caught here (docs/decisions.md, "Webhooks").
 */

/** An IPv4 range: network address and prefix length. */
type Range4 = readonly [number, number, number, number, number];

/** IPv4 ranges never called: RFC 6890's special-purpose blocks that reach the caller's own network or nothing. */
const BLOCKED_V4: readonly Range4[] = [
  [0, 0, 0, 0, 8], // "this network", includes the unspecified 0.0.0.0
  [10, 0, 0, 0, 8], // private
  [100, 64, 0, 0, 10], // CGNAT shared space (also Alibaba's metadata at 100.100.100.200)
  [127, 0, 0, 0, 8], // loopback
  [169, 254, 0, 0, 16], // link-local: cloud metadata at 169.254.169.254
  [172, 16, 0, 0, 12], // private
  [192, 0, 0, 0, 24], // IETF protocol assignments (Oracle's metadata at 192.0.0.192)
  [192, 0, 2, 0, 24], // documentation (TEST-NET-1): never routed
  [198, 51, 100, 0, 24], // documentation (TEST-NET-2)
  [203, 0, 113, 0, 24], // documentation (TEST-NET-3)
  [192, 168, 0, 0, 16], // private
  [198, 18, 0, 0, 15], // benchmarking networks
  [224, 0, 0, 0, 4], // multicast
  [240, 0, 0, 0, 4], // reserved, includes broadcast 255.255.255.255
];

/** Host names that always mean this machine or a private network. */
const BLOCKED_NAME = /(^|\.)(localhost|local|internal|home\.arpa)$/;

function v4Number(parts: readonly number[]): number {
  return ((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0;
}

/** Whether a dotted-decimal IPv4 address (four numbers 0-255) is in a blocked range. */
function isBlockedV4(parts: readonly number[]): boolean {
  const address = v4Number(parts);
  return BLOCKED_V4.some(([a, b, c, d, prefix]) => {
    const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
    return (address & mask) >>> 0 === (v4Number([a, b, c, d]) & mask) >>> 0;
  });
}

/** The four numbers of a dotted-decimal IPv4 address, or undefined for anything else. */
function parseV4(host: string): number[] | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  return parts.every((p) => p <= 255) ? parts : undefined;
}

/** The eight 16-bit groups of an IPv6 address (with `::` and an optional dotted IPv4 tail), or undefined. */
function parseV6(text: string): number[] | undefined {
  let head = text;
  const tail: number[] = [];
  const dotted = /^(.*:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (dotted) {
    const v4 = parseV4(dotted[2]!);
    if (!v4) return undefined;
    head = dotted[1]!.endsWith("::") ? dotted[1]! : dotted[1]!.slice(0, -1);
    tail.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
  }
  const halves = head.split("::");
  if (halves.length > 2) return undefined;
  const groups = (s: string) => (s === "" ? [] : s.split(":"));
  const left = groups(halves[0]!);
  const right = halves.length === 2 ? groups(halves[1]!) : [];
  const written = [...left, ...right];
  if (!written.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return undefined;
  const missing = 8 - written.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const fill = halves.length === 2 ? new Array<number>(missing).fill(0) : [];
  return [...left.map((g) => parseInt(g, 16)), ...fill, ...right.map((g) => parseInt(g, 16)), ...tail];
}

/** The IPv4 address in groups 6 and 7. */
function embeddedV4(g: readonly number[]): number[] {
  return [g[6]! >> 8, g[6]! & 0xff, g[7]! >> 8, g[7]! & 0xff];
}

/**
 * Whether an IPv6 address is blocked: unspecified, loopback, unique-local (fc00::/7, AWS metadata fd00:ec2::254),
 * link-local, site-local, multicast, discard-only, Teredo, or an IPv4 address carried inside IPv6 (mapped, compatible,
 * NAT64, 6to4) that is blocked itself.
 */
function isBlockedV6(g: readonly number[]): boolean {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0] = g;
  const zeroTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroTo(8)) return true; // ::
  if (zeroTo(7) && g[7] === 1) return true; // ::1
  if (zeroTo(5) && g5 === 0xffff) return isBlockedV4(embeddedV4(g)); // ::ffff:a.b.c.d
  if (zeroTo(4) && g4 === 0xffff && g5 === 0) return isBlockedV4(embeddedV4(g)); // ::ffff:0:a.b.c.d (IPv4-translated)
  if (zeroTo(6)) return true; // ::a.b.c.d (deprecated IPv4-compatible): nothing public lives there
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return isBlockedV4(embeddedV4(g)); // NAT64
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return true; // local-use NAT64 64:ff9b:1::/48: translates into private networks
  if (g0 === 0x2002) return isBlockedV4([g1 >> 8, g1 & 0xff, g2 >> 8, g2 & 0xff]); // 6to4
  if (g0 === 0x2001 && g1 === 0) return true; // Teredo: the IPv4 inside is obfuscated
  if (g0 === 0x100 && g1 === 0 && g2 === 0 && g3 === 0) return true; // discard-only 100::/64
  if ((g0 & 0xfe00) === 0xfc00) return true; // unique local fc00::/7
  if ((g0 & 0xffc0) === 0xfe80 || (g0 & 0xffc0) === 0xfec0) return true; // link-local, site-local
  return (g0 & 0xff00) === 0xff00; // multicast
}

/**
 * Why the service refuses to call `host` (a URL's normalised hostname), or undefined when it may. An IP literal is
 * checked against the range tables; a name only against the names that always mean a private network.
 */
export function blockedHostReason(host: string): string | undefined {
  const name = host.toLowerCase().replace(/\.$/, "");
  if (name.startsWith("[") && name.endsWith("]")) {
    const groups = parseV6(name.slice(1, -1));
    if (!groups) return `${host} is not a valid IPv6 address`;
    return isBlockedV6(groups) ? `${host} is a private, loopback, link-local or reserved address` : undefined;
  }
  const v4 = parseV4(name);
  if (v4) return isBlockedV4(v4) ? `${host} is a private, loopback, link-local or reserved address` : undefined;
  if (BLOCKED_NAME.test(name)) return `${host} names a local or internal host`;
  // A single-label name (`metadata`, `intranet`) resolves through local search domains, never to a public host.
  if (!name.includes(".")) return `${host} is not a fully qualified host name`;
  return undefined;
}

/**
 * Why a webhook URL is refused, or undefined when the service may call it. `allowInsecure` is
 * `Webhooks:AllowInsecureUrls`: http:// and private addresses are then accepted (local development).
 */
export function webhookUrlProblem(raw: string, allowInsecure: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "The webhook url must be an absolute http(s) URL";
  }
  if (url.username !== "" || url.password !== "")
    return "The webhook url must not carry credentials; use the subscription's headers instead";
  if (url.protocol !== "https:" && !(allowInsecure && url.protocol === "http:")) {
    return allowInsecure
      ? "The webhook url must use http or https"
      : "The webhook url must use https (http needs Webhooks:AllowInsecureUrls)";
  }
  if (allowInsecure) return undefined;
  const blocked = blockedHostReason(url.hostname);
  return blocked ? `The webhook url is refused: ${blocked} (allowed only with Webhooks:AllowInsecureUrls)` : undefined;
}
