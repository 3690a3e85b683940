import { DurableObject } from "cloudflare:workers";

/** One object per client IP: request and failed-login counters (SPEC "Limits"). */
export class RateLimiter extends DurableObject {}
