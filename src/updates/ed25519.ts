/**
 * Ed25519 signature verification over a stream (RFC 8032 section 5.1.7, cofactorless, as the ref10 code Sparkle's
 * sign_update and SUSignatureVerifier use): the message is only ever hashed, through the runtime's streaming SHA-512
 * (crypto.DigestStream), so an archive of any size is checked without holding it in memory (WebCrypto's Ed25519 needs
 * the whole message). Verification handles public values only: it need not be constant-time.
 */

const P = 2n ** 255n - 19n;
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

function mod(a: bigint, m = P): bigint {
  const r = a % m;
  return r >= 0n ? r : r + m;
}

function pow(base: bigint, exponent: bigint): bigint {
  let result = 1n;
  let b = mod(base);
  let e = exponent;
  while (e > 0n) {
    if (e & 1n) result = (result * b) % P;
    b = (b * b) % P;
    e >>= 1n;
  }
  return result;
}

const inv = (a: bigint) => pow(a, P - 2n);
const D = mod(-121665n * inv(121666n));
const D2 = mod(2n * D);
/** A square root of -1. */
const SQRT_M1 = pow(2n, (P - 1n) / 4n);

/** A point in extended coordinates (X:Y:Z:T), x = X/Z, y = Y/Z, x*y = T/Z. */
type Point = readonly [bigint, bigint, bigint, bigint];

const ZERO: Point = [0n, 1n, 1n, 0n];

function add(p: Point, q: Point): Point {
  const a = mod((p[1] - p[0]) * (q[1] - q[0]));
  const b = mod((p[1] + p[0]) * (q[1] + q[0]));
  const c = mod(p[3] * D2 * q[3]);
  const d = mod(p[2] * 2n * q[2]);
  const e = b - a;
  const f = d - c;
  const g = d + c;
  const h = b + a;
  return [mod(e * f), mod(g * h), mod(f * g), mod(e * h)];
}

function multiply(p: Point, scalar: bigint): Point {
  let result = ZERO;
  let addend = p;
  let s = scalar;
  while (s > 0n) {
    if (s & 1n) result = add(result, addend);
    addend = add(addend, addend);
    s >>= 1n;
  }
  return result;
}

function littleEndian(bytes: Uint8Array): bigint {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i]!);
  return n;
}

/** The point a 32-byte encoding names, or undefined when it names none. */
function decode(bytes: Uint8Array): Point | undefined {
  if (bytes.length !== 32) return undefined;
  const n = littleEndian(bytes);
  const sign = n >> 255n;
  const y = n & ((1n << 255n) - 1n);
  if (y >= P) return undefined;
  const y2 = (y * y) % P;
  const x2 = mod((y2 - 1n) * inv(D * y2 + 1n));
  let x = pow(x2, (P + 3n) / 8n);
  if (mod(x * x - x2) !== 0n) x = (x * SQRT_M1) % P;
  if (mod(x * x - x2) !== 0n) return undefined;
  if (x === 0n && sign === 1n) return undefined;
  if ((x & 1n) !== sign) x = P - x;
  return [x, y, 1n, (x * y) % P];
}

function encode(p: Point): Uint8Array {
  const zInv = inv(p[2]);
  const x = mod(p[0] * zInv);
  let y = mod(p[1] * zInv);
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) {
    out[i] = Number(y & 0xffn);
    y >>= 8n;
  }
  out[31]! |= Number(x & 1n) << 7;
  return out;
}

const BASE = decode(
  Uint8Array.from([0x58, ...new Array<number>(31).fill(0x66)]), // y = 4/5, x even: RFC 8032's B
)!;

/**
 * Whether `signature` (64 bytes: R || S) is the Ed25519 signature of the message `chunks` streams, under `publicKey`
 * (32 bytes).
 */
export async function ed25519Verify(
  publicKey: Uint8Array,
  signature: Uint8Array,
  chunks: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>,
): Promise<boolean> {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  const a = decode(publicKey);
  if (!a) return false;
  const rBytes = signature.subarray(0, 32);
  const s = littleEndian(signature.subarray(32));
  if (s >= L) return false;
  const digest = new crypto.DigestStream("SHA-512");
  const writer = digest.getWriter();
  await writer.write(rBytes);
  await writer.write(publicKey);
  for await (const chunk of chunks as AsyncIterable<Uint8Array>) await writer.write(chunk);
  await writer.close();
  const k = littleEndian(new Uint8Array(await digest.digest)) % L;
  const minusA: Point = [mod(-a[0]), a[1], a[2], mod(-a[3])];
  const r = add(multiply(BASE, s), multiply(minusA, k));
  const encoded = encode(r);
  return encoded.every((byte, i) => byte === rBytes[i]);
}
