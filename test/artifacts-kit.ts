/** Shared pieces of the artifact tests: bytes and their hashes, application releases, uploads as clients send them. */
import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { ADMIN, BASE, admin } from "./helpers";
import type { JsonBody } from "./json-body.ts";

export const MiB = 1024 * 1024;

/** Pseudo-random bytes (xorshift), cheap enough for a few MiB. */
export function bytesOf(n: number, seed = 1): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed * 2654435761 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** What the service must answer for these bytes: size, SHA-256 lowercase hex, SHA-512 base64. */
export async function hashesOf(bytes: Uint8Array): Promise<{ size: number; sha256: string; sha512: string }> {
  const sha256 = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const sha512 = new Uint8Array(await crypto.subtle.digest("SHA-512", bytes));
  return {
    size: bytes.byteLength,
    sha256: [...sha256].map((b) => b.toString(16).padStart(2, "0")).join(""),
    sha512: btoa(String.fromCharCode(...sha512)),
  };
}

export const unique = () => crypto.randomUUID().slice(0, 8);

/** gzip of `bytes`, through the runtime's CompressionStream. */
export async function gzip(bytes: Uint8Array | string): Promise<Uint8Array> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** A blockmap of `bytes` as electron-builder writes one: gzip-compressed JSON (version 2) of fixed-size blocks. */
export async function blockmapOf(bytes: Uint8Array, block = 64 * 1024): Promise<Uint8Array> {
  const sizes: number[] = [];
  const checksums: string[] = [];
  for (let at = 0; at < bytes.length; at += block) {
    const piece = bytes.subarray(at, at + block);
    sizes.push(piece.byteLength);
    checksums.push(btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-256", piece)))));
  }
  return gzip(JSON.stringify({ version: "2", files: [{ name: "file", offset: 0, checksums, sizes }] }));
}

/** A product (an application unless told otherwise) with a unique code. */
export async function newProduct(isApplication = true): Promise<{ id: number; code: string }> {
  const code = `app-${unique()}`;
  const res = await admin("POST", "/v1/products", { product: { code, name: "App", isApplication } });
  expect(res.status, res.text).toBe(200);
  return { id: res.body["productId"], code };
}

/** A release of a new product, and the path of its downloads. */
export async function newRelease(
  version = "1.0.0",
  isApplication = true,
): Promise<{ productId: number; releaseId: number; code: string; path: string }> {
  const product = await newProduct(isApplication);
  const res = await admin("POST", `/v1/products/${product.id}/releases`, { productRelease: { version } });
  expect(res.status, res.text).toBe(200);
  const releaseId = res.body["productReleaseId"];
  return {
    productId: product.id,
    releaseId,
    code: product.code,
    path: `/v1/products/${product.id}/releases/${releaseId}/downloads`,
  };
}

/** Form fields of an upload (defaults: win-x64 installer, the part named Setup.exe). */
export interface UploadOptions {
  platform?: string;
  kind?: string;
  fileName?: string;
  sourceKind?: string;
  signature?: string;
  partName?: string;
}

/** POSTs a FormData upload, the way browsers and Node's fetch send one (fields first, file last). */
export async function upload(path: string, bytes: Uint8Array, o: UploadOptions = {}) {
  const form = new FormData();
  form.set("platform", o.platform ?? "win-x64");
  form.set("kind", o.kind ?? "installer");
  if (o.fileName) form.set("fileName", o.fileName);
  if (o.sourceKind) form.set("sourceKind", o.sourceKind);
  if (o.signature) form.set("signature", o.signature);
  form.set("file", new Blob([bytes]), o.partName ?? "Setup.exe");
  return send("POST", path, form);
}

/** One call with the administrator's key and a raw body; the JSON answer parsed. */
export async function send(method: string, path: string, body?: BodyInit, headers: Record<string, string> = {}) {
  const res = await exports.default.fetch(`${BASE}${path}`, {
    method,
    headers: { "x-api-key": ADMIN.key, ...headers },
    ...(body !== undefined ? { body } : {}),
  });
  const text = await res.text();
  return {
    status: res.status,
    text,
    body: (text && (res.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) : undefined) as JsonBody,
  };
}
