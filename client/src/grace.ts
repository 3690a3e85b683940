/**
 * Offline grace (CONTRACT section 11): a license that validated online stays usable for `offlineGraceDays` (the
 * service's `Licensing:OfflineGraceDays`, signed into every validation's license key) while the service cannot be
 * reached, then is refused. The application gives a store (a file in its user-data directory: `fileStore` of
 * `@licensing/client/node`); the client keeps there the last signed validation and the latest time it has seen.
 *
 * What makes it safe to keep on the user's disk: the grace is counted from the signed key's `iat` (the service's
 * clock) with the signed `offlineGraceDays`, the key is verified against the application's JWKS for this machine, and
 * a clock set back (before the key's issue or the last time seen) is refused. A refusal by the service (revoked,
 * expired, deactivated) replaces what the store holds, so the grace ends at the first validation that reaches the
 * service.
 */
import { decodeJwt } from "jose";
import type { LicensingClient } from "./client.js";
import { LicensingClientError, LicensingError, NetworkError, ProtocolError, ServiceError } from "./errors.js";
import type { JwkSet, LicenseKeyPayload, ValidateRequest, ValidateResult } from "./types.js";
import { verifyLicenseOffline } from "./verify.js";

/** Where the client keeps the last validation: text in, text out (a file, the application's settings…). */
export interface ValidationStore {
  /** The stored text, or `undefined` when nothing is stored yet. */
  read(): string | undefined | Promise<string | undefined>;
  /** Replaces the stored text. */
  write(text: string): void | Promise<void>;
}

/** A store in memory (a process that must not write to disk, tests). */
export function memoryStore(initial?: string): ValidationStore {
  let text = initial;
  return {
    read: () => text,
    write: (value) => {
      text = value;
    },
  };
}

/** Why a license cannot be used offline. */
export type OfflineGraceFailure =
  /** The grace days after the last validation have passed. */
  | "graceEnded"
  /** No validation was ever stored (or it is unreadable, or for another machine or key set). */
  | "noValidation"
  /** The service refused the license at its last validation (revoked, expired, deactivated…). */
  | "refused"
  /** The computer's clock is earlier than the last validation or the last time the application saw: set back. */
  | "clock"
  /** The license itself expired (its `expireAt`) since the last validation. */
  | "expired";

/** The service cannot be reached and the license cannot be used offline; `cause` is why the service was not reached. */
export class OfflineGraceError extends LicensingClientError {
  readonly reason: OfflineGraceFailure;
  /** When the last stored validation was signed, if there is one. */
  readonly validatedAt: Date | undefined;
  /** When its grace ended (or ends), if there is one. */
  readonly graceUntil: Date | undefined;

  constructor(
    reason: OfflineGraceFailure,
    message: string,
    info: { cause?: unknown; validatedAt?: Date; graceUntil?: Date } = {},
  ) {
    super(message, info.cause === undefined ? undefined : { cause: info.cause });
    this.reason = reason;
    this.validatedAt = info.validatedAt;
    this.graceUntil = info.graceUntil;
  }
}

/** Options of {@link OfflineGrace}. */
export interface OfflineGraceOptions {
  /** Where the last validation is kept. */
  store: ValidationStore;
  /** The service's JWK Set the application keeps (stored validations are verified against it, offline). */
  jwks: JwkSet;
  /** When given, a stored validation of another product's license is not used. */
  productCode?: string;
  /** The clock (default: the computer's). */
  now?: () => Date;
  /** Seconds the computer's clock may be behind before it counts as set back (default 300). */
  clockSkewSeconds?: number;
}

/** The answer of {@link OfflineGrace.validate}: online, or offline within the grace. */
export type GraceResult =
  | {
      online: true;
      /** The service's answer. */
      validation: ValidateResult;
      /** Days the license stays usable offline from now, as the service signed it (0 when the answer carried no key). */
      graceDays: number;
      /** Until when it would stay usable offline (undefined when the answer carried no license key to keep). */
      graceUntil: Date | undefined;
    }
  | {
      online: false;
      /** The verified payload of the last validation's license key. */
      license: LicenseKeyPayload;
      /** When that validation was signed. */
      validatedAt: Date;
      graceDays: number;
      /** When the offline use ends. */
      graceUntil: Date;
      /** Why the service was not reached. */
      error: LicensingClientError;
    };

/** What the store holds (JSON). Only `licenseKey` is trusted, through its signature; the rest only narrows. */
interface Stored {
  v: 1;
  machineId?: string;
  licenseKey?: string;
  /** The latest time the application saw (ISO). */
  lastSeen?: string;
  /** The service's refusal at the last validation that reached it. */
  refused?: { message: string; reason?: string; at: string };
}

const DAY = 86_400_000;

/** Whether the error means the service was not reached (rather than that it refused): grace applies. */
export function isUnreachable(error: unknown): error is LicensingClientError {
  if (error instanceof NetworkError || error instanceof ProtocolError) return true;
  // 429 and 5xx: the service (or what stands before it) is down or overloaded, not a judgement of the license.
  if (error instanceof ServiceError)
    return error.httpStatus === undefined
      ? error.grpcCode === 14 || error.grpcCode === 4
      : error.httpStatus >= 500 || error.httpStatus === 429;
  return false;
}

/**
 * Validates online when the service answers, and keeps the license usable offline for the grace days when it does
 * not. `validate` throws the service's {@link LicensingError} when it refuses the license (and ends the grace), an
 * {@link OfflineGraceError} when it cannot be reached and the license is not usable offline.
 */
export class OfflineGrace {
  private readonly now: () => Date;

  constructor(
    private readonly client: LicensingClient,
    private readonly options: OfflineGraceOptions,
  ) {
    this.now = options.now ?? (() => new Date());
  }

  private async load(): Promise<Stored> {
    const text = await this.options.store.read();
    if (!text) return { v: 1 };
    try {
      const parsed = JSON.parse(text) as Stored;
      return typeof parsed === "object" && parsed !== null ? { ...parsed, v: 1 } : { v: 1 };
    } catch {
      return { v: 1 };
    }
  }

  private async save(stored: Stored, now: Date): Promise<void> {
    const last = stored.lastSeen ? Date.parse(stored.lastSeen) : Number.NaN;
    const lastSeen = Number.isNaN(last) || now.getTime() > last ? now.toISOString() : stored.lastSeen;
    await this.options.store.write(JSON.stringify({ ...stored, v: 1, lastSeen }));
  }

  /** The stored validation for this machine, verified, with its grace; or why there is none. */
  private async verifiedStored(
    stored: Stored,
    machineId: string,
  ): Promise<{ payload: LicenseKeyPayload; validatedAt: Date; graceDays: number; graceUntil: Date } | undefined> {
    if (!stored.licenseKey || stored.machineId !== machineId) return undefined;
    let payload: LicenseKeyPayload;
    try {
      // Checked as of its own issue: its signature, machine and product; the grace below decides how long it lasts.
      const iat = Number(decodeJwt(stored.licenseKey).iat);
      payload = await verifyLicenseOffline(stored.licenseKey, this.options.jwks, {
        now: new Date(iat * 1000),
        machineId,
        ...(this.options.productCode !== undefined ? { productCode: this.options.productCode } : {}),
      });
    } catch {
      return undefined;
    }
    return { payload, ...graceOf(payload) };
  }

  /**
   * Validates the license for `request.machineId`: online when the service answers (the answer's signed license key
   * is stored with its grace), else from the store within the grace.
   */
  async validate(request: ValidateRequest & { machineId: string }): Promise<GraceResult> {
    const stored = await this.load();
    let validation: ValidateResult;
    try {
      validation = await this.client.validate(request);
    } catch (error) {
      const now = this.now();
      if (error instanceof LicensingError) {
        // The service judged the license: whatever was kept no longer counts.
        await this.save(
          {
            v: 1,
            machineId: request.machineId,
            refused: {
              message: error.message,
              ...(error.reason !== undefined ? { reason: error.reason } : {}),
              at: now.toISOString(),
            },
          },
          now,
        );
        throw error;
      }
      if (!isUnreachable(error)) throw error;
      return this.offline(stored, request.machineId, error, now);
    }
    const now = this.now();
    const licenseKey = validation.license.licenseKey;
    if (licenseKey === undefined) {
      // A usable license whose answer proves nothing for this machine (no key): nothing to keep for offline use.
      await this.save(
        { v: 1, machineId: request.machineId, ...(stored.lastSeen ? { lastSeen: stored.lastSeen } : {}) },
        now,
      );
      return { online: true, validation, graceDays: 0, graceUntil: undefined };
    }
    await this.save(
      { v: 1, machineId: request.machineId, licenseKey, ...(stored.lastSeen ? { lastSeen: stored.lastSeen } : {}) },
      now,
    );
    const verified = await this.verifiedStored({ v: 1, machineId: request.machineId, licenseKey }, request.machineId);
    return {
      online: true,
      validation,
      graceDays: verified?.graceDays ?? 0,
      graceUntil: verified?.graceUntil,
    };
  }

  private async offline(
    stored: Stored,
    machineId: string,
    cause: LicensingClientError,
    now: Date,
  ): Promise<GraceResult> {
    const skew = (this.options.clockSkewSeconds ?? 300) * 1000;
    if (stored.refused && stored.machineId === machineId)
      throw new OfflineGraceError(
        "refused",
        `The licensing service cannot be reached, and at the last validation it refused the license (${stored.refused.message}${stored.refused.reason ? `, ${stored.refused.reason}` : ""}): it cannot be used offline`,
        { cause },
      );
    const verified = await this.verifiedStored(stored, machineId);
    if (!verified)
      throw new OfflineGraceError(
        "noValidation",
        "The licensing service cannot be reached, and the license was never validated online on this machine: connect once to use it offline",
        { cause },
      );
    const info = { cause, validatedAt: verified.validatedAt, graceUntil: verified.graceUntil };
    const lastSeen = stored.lastSeen ? Date.parse(stored.lastSeen) : Number.NaN;
    if (
      now.getTime() + skew < verified.validatedAt.getTime() ||
      (!Number.isNaN(lastSeen) && now.getTime() + skew < lastSeen)
    )
      throw new OfflineGraceError(
        "clock",
        `The computer's clock (${now.toISOString()}) is earlier than the last validation or the last time this application ran: the clock was set back`,
        info,
      );
    if (verified.payload.expireAt !== undefined && Date.parse(verified.payload.expireAt) <= now.getTime())
      throw new OfflineGraceError("expired", `The license expired at ${verified.payload.expireAt}`, info);
    if (now.getTime() >= verified.graceUntil.getTime())
      throw new OfflineGraceError(
        "graceEnded",
        `The licensing service cannot be reached, and the license's ${verified.graceDays} days of offline use after its last validation (${verified.validatedAt.toISOString()}) ended at ${verified.graceUntil.toISOString()}: connect to validate it`,
        info,
      );
    await this.save(stored, now);
    return {
      online: false,
      license: verified.payload,
      validatedAt: verified.validatedAt,
      graceDays: verified.graceDays,
      graceUntil: verified.graceUntil,
      error: cause,
    };
  }
}

/**
 * The grace of a verified license key: from its `iat`, `offlineGraceDays` days (0 when the key carries none). A
 * Floating key's grace ends with the seat's lease (`exp`): offline use of a floating seat is a borrow.
 */
function graceOf(payload: LicenseKeyPayload): { validatedAt: Date; graceDays: number; graceUntil: Date } {
  const validatedAt = new Date(payload.iat * 1000);
  const graceDays = payload.offlineGraceDays ?? 0;
  let until = validatedAt.getTime() + graceDays * DAY;
  if (payload.licensingMode === "Floating" && payload.exp !== undefined) until = Math.min(until, payload.exp * 1000);
  return { validatedAt, graceDays, graceUntil: new Date(until) };
}
