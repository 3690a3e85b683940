// Types of bench/floor-statements.mjs, for test/bench-floors.test.ts.
export declare const HEARTBEAT_READ: { sql: string; params: unknown[] };
export declare const VALIDATE_READ: { sql: string; params: unknown[] };
export declare const FLOOR_ROWS: string[];
