import { DurableObject } from "cloudflare:workers";

/** One object per floating license: its seats (CONTRACT section 4). */
export class LicenseSeats extends DurableObject {}
