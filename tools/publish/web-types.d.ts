/**
 * The signing inspectors (signing/, compiled from src/updates/signing) hand Web Crypto and DecompressionStream the
 * Uint8Array views they read, as the Workers runtime types allow (BufferSource: any ArrayBufferView). lib.dom since
 * TypeScript 5.7 takes only views over an ArrayBuffer (Uint8Array<ArrayBuffer>), which a Uint8Array<ArrayBufferLike>
 * is not; these overloads accept the views Node and browsers take at run time, so the package build type-checks the
 * same modules the service runs.
 */
interface SubtleCrypto {
  digest(algorithm: string | object, data: Uint8Array): Promise<ArrayBuffer>;
  importKey(
    format: "raw" | "spki",
    keyData: Uint8Array,
    algorithm: string | object,
    extractable: boolean,
    keyUsages: ("verify" | "sign")[],
  ): Promise<CryptoKey>;
  verify(algorithm: string | object, key: CryptoKey, signature: Uint8Array, data: Uint8Array): Promise<boolean>;
}

// biome-ignore lint/suspicious/noExplicitAny: the type parameter as lib.dom declares it (declarations must agree)
interface ReadableStream<R = any> {
  pipeThrough<T>(transform: { writable: WritableStream<BufferSource>; readable: ReadableStream<T> }): ReadableStream<T>;
}
