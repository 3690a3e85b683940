// The part of node:fs that `trackSessions` (src/sessions.ts) uses, typed here so the client's other files never see
// Node's types (tsconfig.json "paths"). Synchronous on purpose: a crash is written as the process dies.
export declare function readFileSync(path: string, encoding: "utf8"): string;
export declare function writeFileSync(path: string, data: string): void;
export declare function mkdirSync(path: string, options?: { recursive?: boolean }): string | undefined;
export declare function renameSync(from: string, to: string): void;
