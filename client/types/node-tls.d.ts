// The part of node:tls that `trustingFetch` (src/node.ts) uses, typed here so the client's other files never see
// Node's types (tsconfig.json "paths").
export declare const rootCertificates: readonly string[];
/** Node >= 22.15 and 23.10; older versions have only rootCertificates. */
export declare const getCACertificates: ((type?: "default" | "system" | "bundled" | "extra") => string[]) | undefined;
