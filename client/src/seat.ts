/**
 * A floating seat held by this process: it beats every `heartbeatInterval` seconds so the service keeps the seat
 * (CONTRACT section 4: a seat lives 2 x interval + 30 s after its last heartbeat) until `release()`. One missed beat is
 * harmless, so a network failure only reports and tries again at the next beat; a licensing refusal (token unknown or
 * expired, license revoked) means the seat is gone, so the timer stops.
 */
import { LicensingClientError, LicensingError, ProtocolError } from "./errors.js";
import type { FloatingGrant, HeartbeatResult, License, ReleaseResult } from "./types.js";

/** How a seat reports what happens to it between calls. */
export interface SeatOptions {
  /**
   * Seconds between heartbeats. Defaults to the `heartbeatInterval` the service answers (and follows it when a
   * heartbeat answers a new one); a smaller value only spends requests.
   */
  heartbeatInterval?: number;
  /**
   * A heartbeat failed. `terminal` is true when the seat is lost (a {@link LicensingError}: the service no longer
   * knows the token, or the license was revoked or expired); the timer has then stopped and `state` is `"lost"`.
   * Otherwise (network, 429, 5xx) the next heartbeat is tried as usual.
   */
  onError?: (error: LicensingClientError, info: { terminal: boolean }) => void;
  /** A heartbeat succeeded. */
  onHeartbeat?: (result: HeartbeatResult) => void;
}

/** `active` while heartbeats run; `released` after `release()`; `lost` after a terminal heartbeat failure. */
export type SeatState = "active" | "released" | "lost";

/** The two calls a seat makes; the client binds them to its transport and credentials. */
export interface SeatOperations {
  heartbeat(licenseToken: string): Promise<HeartbeatResult>;
  release(licenseToken: string): Promise<ReleaseResult>;
}

/** Refuses options a seat cannot run with; checked before a seat is requested, so a bad option never strands one. */
export function checkSeatOptions(options: SeatOptions): void {
  if (options.heartbeatInterval !== undefined && !(options.heartbeatInterval > 0)) {
    throw new RangeError("heartbeatInterval must be a positive number of seconds");
  }
}

function asClientError(error: unknown): LicensingClientError {
  return error instanceof LicensingClientError
    ? error
    : new ProtocolError(error instanceof Error ? error.message : String(error), { cause: error });
}

/** A granted floating seat that keeps itself alive with heartbeats until {@link FloatingSeat.release}. */
export class FloatingSeat {
  /** The seat's token (`fltk_…`). */
  readonly licenseToken: string;
  /** The license the seat belongs to. */
  readonly license: License;
  /** When the seat expires without another heartbeat. */
  tokenExpireAt: Date | undefined;
  /** Seats in use, as of the last answer. */
  activeClientCount: number;
  /** Concurrent seats the license allows (0 = unlimited). */
  maxClientCount: number;
  /** Seconds between heartbeats the service expects. */
  heartbeatInterval: number;
  /** The last heartbeat failure, if any. */
  lastError: LicensingClientError | undefined;

  private currentState: SeatState = "active";
  private timer: ReturnType<typeof setTimeout> | undefined;
  private releasing: Promise<ReleaseResult> | undefined;
  private readonly operations: SeatOperations;
  private readonly options: SeatOptions;

  /** Starts the heartbeat timer for a granted seat; applications get seats from `LicensingClient.requestFloating`. */
  constructor(grant: FloatingGrant, operations: SeatOperations, options: SeatOptions = {}) {
    checkSeatOptions(options);
    this.licenseToken = grant.licenseToken;
    this.license = grant.license;
    this.tokenExpireAt = grant.tokenExpireAt;
    this.activeClientCount = grant.activeClientCount;
    this.maxClientCount = grant.maxClientCount;
    this.heartbeatInterval = grant.heartbeatInterval;
    this.operations = operations;
    this.options = options;
    this.schedule();
  }

  /** `active`, `released` or `lost`. */
  get state(): SeatState {
    return this.currentState;
  }

  /** Seconds until the next heartbeat: the caller's choice, else the service's (at least one second). */
  private intervalSeconds(): number {
    return this.options.heartbeatInterval ?? Math.max(1, this.heartbeatInterval);
  }

  private schedule(): void {
    if (this.currentState !== "active") return;
    this.timer = setTimeout(() => void this.beat(), this.intervalSeconds() * 1000);
  }

  private stopTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private report(error: LicensingClientError, terminal: boolean): void {
    this.lastError = error;
    try {
      this.options.onError?.(error, { terminal });
    } catch (callbackError) {
      // A throwing callback must not stop the heartbeats; surface it where unhandled errors go.
      queueMicrotask(() => {
        throw callbackError;
      });
    }
  }

  private async beat(): Promise<void> {
    this.timer = undefined;
    if (this.currentState !== "active") return;
    try {
      await this.heartbeat();
    } catch {
      // heartbeat() has reported the failure and decided whether the seat is lost.
    }
    this.schedule();
  }

  /**
   * Sends one heartbeat now (the timer sends them on its own; this is for an application that wants to confirm the
   * seat, e.g. after waking from sleep). Updates the seat's counts and expiry; a licensing refusal marks it `lost`.
   */
  async heartbeat(): Promise<HeartbeatResult> {
    if (this.currentState !== "active") throw new LicensingClientError(`The seat is ${this.currentState}`);
    let result: HeartbeatResult;
    try {
      result = await this.operations.heartbeat(this.licenseToken);
    } catch (caught) {
      const error = asClientError(caught);
      // The seat may have been released while the heartbeat was in flight; that is not a loss.
      if (this.currentState !== "active") throw error;
      const terminal = error instanceof LicensingError;
      if (terminal) {
        this.currentState = "lost";
        this.stopTimer();
      }
      this.report(error, terminal);
      throw error;
    }
    this.tokenExpireAt = result.tokenExpireAt;
    this.activeClientCount = result.activeClientCount;
    this.maxClientCount = result.maxClientCount;
    if (result.heartbeatInterval > 0) this.heartbeatInterval = result.heartbeatInterval;
    this.lastError = undefined;
    try {
      this.options.onHeartbeat?.(result);
    } catch (callbackError) {
      queueMicrotask(() => {
        throw callbackError;
      });
    }
    return result;
  }

  /**
   * Stops the heartbeats and gives the seat back. Calling it again returns the same answer. A seat that was already
   * lost is still released on the service (in case only this process thought it lost); the service's refusal, such as
   * `License token not found` for a reclaimed seat, is thrown.
   */
  release(): Promise<ReleaseResult> {
    if (!this.releasing) {
      this.currentState = "released";
      this.stopTimer();
      this.releasing = this.operations.release(this.licenseToken);
    }
    return this.releasing;
  }
}
