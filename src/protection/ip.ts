/**
 * IP addresses for the IP lists (SPEC "Limits": Whitelist, Blacklist): IPv4 and IPv6 in any spelling
 * (`::1` = `0:0:0:0:0:0:0:1`, `::ffff:127.0.0.1` = `127.0.0.1`), single addresses or CIDR ranges.
 */
import { memo, weakMemo } from "../kernel/memo";

/** The address as bytes: 4 for IPv4 (and IPv4-mapped IPv6), 16 for IPv6; undefined when not an address. */
export function parseIp(text: string): Uint8Array | undefined {
  const value = text
    .trim()
    .replace(/^\[|\]$/g, "")
    .replace(/%.*$/, "");
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(value)) {
    const parts = value.split(".").map(Number);
    return parts.every((p) => p <= 255) ? Uint8Array.from(parts) : undefined;
  }
  if (!value.includes(":")) return undefined;
  let head = value;
  let tailV4: number[] = [];
  const v4 = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(value);
  if (v4?.[1]) {
    tailV4 = v4[1].split(".").map(Number);
    if (tailV4.some((p) => p > 255)) return undefined;
    head = value.slice(0, -v4[1].length) + "0:0";
  }
  const halves = head.split("::");
  if (halves.length > 2) return undefined;
  const groups = (s: string) => (s === "" ? [] : s.split(":"));
  const left = groups(halves[0] ?? "");
  const right = halves.length === 2 ? groups(halves[1] ?? "") : [];
  const missing = 8 - left.length - right.length;
  if ((halves.length === 1 && left.length !== 8) || missing < 0) return undefined;
  const all = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...right];
  if (all.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return undefined;
  const bytes = new Uint8Array(16);
  all.forEach((g, i) => {
    const n = parseInt(g, 16);
    bytes[i * 2] = n >> 8;
    bytes[i * 2 + 1] = n & 0xff;
  });
  if (tailV4.length === 4) bytes.set(tailV4, 12);
  // IPv4-mapped IPv6 is the IPv4 address.
  if (bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return bytes.slice(12);
  return bytes;
}

interface Entry {
  bytes: Uint8Array;
  prefix: number;
}

function parseEntry(text: string): Entry | undefined {
  const [address, bits] = text.trim().split("/");
  const bytes = parseIp(address ?? "");
  if (!bytes) return undefined;
  const max = bytes.length * 8;
  const prefix = bits === undefined ? max : Number(bits);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) return undefined;
  return { bytes, prefix };
}

function within(ip: Uint8Array, entry: Entry): boolean {
  if (ip.length !== entry.bytes.length) return false;
  for (let bit = 0; bit < entry.prefix; bit += 8) {
    const mask = entry.prefix - bit >= 8 ? 0xff : (0xff << (8 - (entry.prefix - bit))) & 0xff;
    if (((ip[bit / 8] ?? 0) & mask) !== ((entry.bytes[bit / 8] ?? 0) & mask)) return false;
  }
  return true;
}

// Lists change only with the settings: each settings object's list is compiled once (keyed by the array itself).
const compiled = weakMemo<readonly string[], Entry[]>("ip-lists", "a settings object's address list (the array)");
// Client addresses recur (an installation polls from the same one): each is parsed once while it is in this bound.
const parsed = memo<string, Uint8Array | undefined>("parsed-ips", {
  key: "client address text",
  max: 4096,
  evict: "all",
});

function parsedIp(ip: string): Uint8Array | undefined {
  if (parsed.has(ip)) return parsed.get(ip);
  const bytes = parseIp(ip);
  return parsed.keep(ip, bytes);
}

/** Whether the address is in the list (addresses and CIDR ranges; unparsable entries are ignored). */
export function ipInList(ip: string, list: readonly string[]): boolean {
  if (list.length === 0) return false;
  const address = parsedIp(ip);
  if (!address) return false;
  let entries = compiled.get(list);
  if (!entries) {
    entries = list.map(parseEntry).filter((e): e is Entry => e !== undefined);
    compiled.set(list, entries);
  }
  return entries.some((e) => within(address, e));
}
