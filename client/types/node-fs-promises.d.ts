// The part of node:fs/promises that `installId` and `fileStore` (src/node.ts) use, typed here so the client's other files never see
// Node's types (tsconfig.json "paths").
export declare function readFile(path: string, encoding: "utf8"): Promise<string>;
export declare function writeFile(path: string, data: string, options?: { flag?: string }): Promise<void>;
export declare function mkdir(path: string, options?: { recursive?: boolean }): Promise<string | undefined>;
export declare function rename(from: string, to: string): Promise<void>;
