/**
 * The service log (CONTRACT section 3 "Log entry"): its levels, its entries and how they reach the `logs` table.
 * Free of HTTP: a request collects its entries in one ServiceLog and writes them once, in one `db.batch()`, after
 * the response has gone (app/app.ts); the queue consumer and the cron trigger can do the same with their own ServiceLog.
 * Writing the log is best effort: a failure is reported to the Worker's console and never thrown.
 */
import { type SQL, and, eq, lt, ne } from "drizzle-orm";
import { clock, nowIso } from "../kernel/clock";
import type { Config } from "../kernel/config";
import type { Db } from "./client";
import { logs } from "./schema";

/** Level names, index = stored number (CONTRACT: Verbose 0 … Fatal 5, the answer of `GET /v1/log/levels`). */
export const LOG_LEVELS = ["Verbose", "Debug", "Information", "Warning", "Error", "Fatal"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * What an entry is about (its `category`): `Service` for the service's own running (failures, warnings), `Audit`
 * for security events (who changed keys, users, roles, passwords, licenses or settings, bootstraps, blocked logins).
 * Audit entries are shown to Administrators only and deleted only by them (routes/management/log.ts).
 */
export const LOG_CATEGORIES = ["Service", "Audit"] as const;
export type LogCategory = (typeof LOG_CATEGORIES)[number];

/** Longest message, exception and properties text kept per entry: D1 rows stay small and a stack loop cannot flood. */
const MAX_TEXT = 8_000;
/** Most entries one request (or job) writes; later ones are counted and dropped, so a loop cannot flood D1. */
const MAX_ENTRIES = 50;

type LogRow = typeof logs.$inferInsert;

/** What an entry carries besides its level and message. */
export interface LogDetails {
  /** The error behind the entry: its name, message and stack become `exception`. */
  error?: unknown;
  /** Free-form context, stored as JSON (method, path, status, client IP …). Never put secrets or user keys here. */
  properties?: Record<string, unknown>;
}

/** What the audit trail records of a credential: names and ids, never a secret. */
export interface AuditPrincipal {
  userId?: string | undefined;
  userName?: string | undefined;
  keyId?: number | undefined;
  keyName?: string | undefined;
  licenseId?: string | undefined;
  /** `customer`: a customer portal session (its customer in `customerId`; none for a license with no customer). */
  kind?: string | undefined;
  customerId?: number | undefined;
}

/**
 * The actor an audit entry or webhook event names for a customer portal session: `{ kind: "customer", customerId }`
 * (customerId null for a license with no customer); undefined for staff and applications.
 */
export function customerActor(
  who: AuditPrincipal | undefined,
): { kind: "customer"; customerId: number | null } | undefined {
  return who?.kind === "customer" ? { kind: "customer", customerId: who.customerId ?? null } : undefined;
}

/** Who caused an audit event: the request's credential (none for anonymous events such as a blocked login) and IP. */
export interface AuditActor {
  /** The credential's identity, as the request's principal (http/app-env.ts) carries it. */
  principal?: AuditPrincipal | undefined;
  clientIp: string;
}

function clip(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
}

/** The `exception` text of an error: its stack (which starts with name and message), or its string form. */
export function exceptionText(error: unknown): string {
  if (error instanceof Error) {
    const stack = error.stack ?? `${error.name}: ${error.message}`;
    return clip(error.cause === undefined ? stack : `${stack}\nCaused by: ${exceptionText(error.cause)}`);
  }
  return clip(String(error));
}

/** Entries of one request or job, written together by `flush`. */
export class ServiceLog {
  private entries: LogRow[] = [];
  private dropped = 0;

  /** Adds an entry at `level`, stamped with the current time. */
  write(level: LogLevel, message: string, details: LogDetails = {}, category: LogCategory = "Service"): void {
    if (this.entries.length >= MAX_ENTRIES) {
      this.dropped++;
      return;
    }
    this.entries.push({
      timestamp: nowIso(),
      level: LOG_LEVELS.indexOf(level),
      category,
      message: clip(message),
      exception: details.error === undefined ? null : exceptionText(details.error),
      properties: details.properties === undefined ? null : clip(JSON.stringify(details.properties)),
    });
  }

  /** An event worth keeping (an audit entry: who changed what). */
  information(message: string, details?: LogDetails): void {
    this.write("Information", message, details);
  }

  /**
   * A security event for the audit trail (category `Audit`, level Information): `event` names it (`ApiKeyCreated`
   * …), and the entry says who did it and from which IP. `properties` say what was touched: ids and names, never a
   * secret (no key, password, token or user key).
   */
  audit(event: string, message: string, by: AuditActor, properties: Record<string, unknown> = {}): void {
    const who = by.principal;
    const actor = customerActor(who);
    this.write(
      "Information",
      message,
      {
        properties: {
          event,
          user:
            who?.userName ??
            (actor ? `customer ${actor.customerId ?? "(none)"}` : who?.licenseId ? `license ${who.licenseId}` : null),
          userId: who?.userId ?? null,
          ...(actor ? { actor } : {}),
          ...(who?.keyId !== undefined ? { apiKeyId: who.keyId, apiKeyName: who.keyName ?? null } : {}),
          clientIp: by.clientIp,
          ...properties,
        },
      },
      "Audit",
    );
  }

  /** Something went wrong but the request could still be served. */
  warning(message: string, details?: LogDetails): void {
    this.write("Warning", message, details);
  }

  /** The request failed (every 5xx answer is one). */
  error(message: string, details?: LogDetails): void {
    this.write("Error", message, details);
  }

  /** How many entries wait to be written. */
  get pending(): number {
    return this.entries.length;
  }

  /**
   * Writes the waiting entries in one batch, stamped with `requestId`, and empties the log. Never rejects: the
   * service log must not turn a good answer into a failure, so a write error goes to the Worker's console only.
   */
  async flush(db: Db, requestId?: string): Promise<void> {
    const rows = this.entries.map((row) => ({ ...row, requestId: row.requestId ?? requestId ?? null }));
    const dropped = this.dropped;
    this.entries = [];
    this.dropped = 0;
    if (dropped > 0)
      console.warn(`service log: ${dropped} entries of request ${requestId ?? "-"} dropped (more than ${MAX_ENTRIES})`);
    if (rows.length === 0) return;
    try {
      // One INSERT per entry: a multi-row INSERT would run into D1's 100 bound parameters.
      const [first, ...rest] = rows.map((row) => db.insert(logs).values(row));
      await db.batch([first!, ...rest]);
    } catch (e) {
      console.error("service log: entries could not be written", e, JSON.stringify(rows).slice(0, 2000));
    }
  }
}

/** The level with this name (case-insensitive) or number, or undefined. */
export function parseLogLevel(value: string | number): LogLevel | undefined {
  if (typeof value === "number" || /^\d+$/.test(value)) return LOG_LEVELS[Number(value)];
  return LOG_LEVELS.find((name) => name.toLowerCase() === value.toLowerCase());
}

/** Which entries `DELETE /v1/log` removes; every condition given must hold. */
export interface LogDeletion {
  /** Delete entries written before this instant. */
  before?: Date;
  /** Delete only entries of this level. */
  level?: LogLevel;
  /** Keep the audit trail (callers below Administrator never delete it). */
  keepAudit?: boolean;
}

/** Deletes the entries matching every condition given (all entries when none is); returns how many. */
export async function deleteLogs(db: Db, which: LogDeletion): Promise<number> {
  const conditions: SQL[] = [];
  if (which.before) conditions.push(lt(logs.timestamp, which.before.toISOString()));
  if (which.level) conditions.push(eq(logs.level, LOG_LEVELS.indexOf(which.level)));
  if (which.keepAudit) conditions.push(ne(logs.category, "Audit"));
  const result = await db
    .delete(logs)
    .where(and(...conditions))
    .run();
  return result.meta.changes;
}

/** The instant before which entries are pruned by the cron trigger (Application:LogRetentionDays). */
export function logRetentionCutoff(config: Config, now: Date = clock.now()): Date {
  return new Date(now.getTime() - config["Application:LogRetentionDays"] * 86_400_000);
}

/** The cron trigger's pruning statement, for its batch (app/housekeeping.ts). */
export function pruneLogs(db: Db, config: Config, now: Date) {
  return db.delete(logs).where(lt(logs.timestamp, logRetentionCutoff(config, now).toISOString()));
}
