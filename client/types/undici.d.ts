// The part of undici that `trustingFetch` (src/node.ts) uses, typed here: undici's own declarations pull in Node's
// types for the whole client, whose other files must see only the web platform's globals (tsconfig.json "paths").
export interface AgentOptions {
  connect?: { ca?: string[] };
}
export declare class Agent {
  constructor(options?: AgentOptions);
  close(): Promise<void>;
}
