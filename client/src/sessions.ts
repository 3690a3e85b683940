/**
 * Release health from the application's side (CONTRACT section 13): {@link trackSessions} records this run of the
 * application as a session (started, then exited, crashed or abnormal) and sends the sessions to
 * `POST /v1/updates/{productCode}/sessions`, so the service can measure crash-free sessions per release, halt a
 * rollout whose release crashes more than the last one, and roll back an install whose new version crashes on start.
 *
 * Sessions are kept in a file in the directory given (Electron's `app.getPath("userData")`) until the service has
 * taken them: a crash is written synchronously as the process dies (Node's `uncaughtExceptionMonitor`, which does not
 * change how the process ends), and sent with the next start; offline, they wait. Node-only (`@licensing/client/node`).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import type { FetchFunction } from "./transport.js";

/** The statuses of a session, as the service reads them. */
export type SessionStatus = "started" | "exited" | "crashed" | "abnormal";

/** A session as sent. */
export interface SessionRecord {
  id: string;
  status: SessionStatus;
  startedAt: string;
  durationMs?: number;
}

/** A session as kept: with the version (and platform) that ran it, which a later run may not share. */
interface KeptSession extends SessionRecord {
  version: string;
  platform?: string;
}

/** The file the sessions wait in, inside the directory given. */
export const SESSIONS_FILE = "licensing-sessions.json";
/** Most sessions kept while the service cannot be reached (the oldest are dropped first). */
export const MAX_KEPT_SESSIONS = 500;
/** Most sessions in one request (the service's limit). */
const BATCH = 100;

/** The process events a tracker listens to: Node's `process`, or a stand-in in tests. */
export interface ProcessEvents {
  on(event: "exit", listener: () => void): unknown;
  on(event: "uncaughtExceptionMonitor", listener: (error: Error) => void): unknown;
}

export interface SessionTrackingOptions {
  /** The service's base URL (`https://licensing.example.com`). */
  baseUrl: string;
  /** The product's code (the one its update feed names). */
  productCode: string;
  /** The running version (Electron's `app.getVersion()`). */
  version: string;
  /** The platform (`win-x64`, `darwin-arm64`, `linux-x64` …), when known. */
  platform?: string;
  /** This installation's id (`installId(directory)` from this module's entry). */
  installId: string;
  /** The license's user key, when the application has one: its sessions then count beyond the per-address limit. */
  userKey?: string;
  /** Where sessions wait until sent (Electron's `app.getPath("userData")`). */
  directory: string;
  /** A fetch that trusts the service's certificate (`trustingFetch`), when the default does not. */
  fetch?: FetchFunction;
  /** The process whose end and crash are recorded (default Node's `process`). */
  process?: ProcessEvents;
}

/** The session of this run, and what the application tells it. */
export interface SessionTracker {
  /** This run's session id. */
  readonly sessionId: string;
  /**
   * Records this run as crashed now (Electron: call it from `render-process-gone` or `child-process-gone` when the
   * application cannot go on), synchronously, so it survives the process ending right after.
   */
  crashed(): void;
  /** Records a clean end of this run now (the process's `exit` does it too). */
  exited(): void;
  /** Sends every waiting session now; resolves with how many the service took (0 when it could not be reached). */
  flush(): Promise<number>;
}

/**
 * Starts this run's session: records it as `started`, listens for the process's exit (a clean end) and for an
 * uncaught exception (a crash), and sends the sessions that wait, earlier runs' ends included. A run that ends
 * without either (killed, hung, power lost) stays `started`, which the service counts as `abnormal` after 24 hours.
 * Never throws for the service being unreachable: sessions wait in `directory` for the next start or `flush()`.
 */
export async function trackSessions(options: SessionTrackingOptions): Promise<SessionTracker> {
  const directory = options.directory.replace(/[\\/]+$/, "");
  const file = `${directory}/${SESSIONS_FILE}`;
  const started = new Date();
  const session: KeptSession = {
    id: crypto.randomUUID(),
    status: "started",
    startedAt: started.toISOString(),
    version: options.version,
    ...(options.platform ? { platform: options.platform } : {}),
  };
  let ended = false;
  const end = (status: SessionStatus) => {
    if (ended) return;
    ended = true;
    keep(file, { ...session, status, durationMs: Date.now() - started.getTime() });
  };
  mkdirSync(directory, { recursive: true });
  keep(file, session);
  const events = options.process ?? (globalThis as unknown as { process: ProcessEvents }).process;
  events.on("exit", () => end("exited"));
  events.on("uncaughtExceptionMonitor", () => end("crashed"));
  const tracker: SessionTracker = {
    sessionId: session.id,
    crashed: () => end("crashed"),
    exited: () => end("exited"),
    flush: () => send(options, file),
  };
  await tracker.flush();
  return tracker;
}

/** The sessions waiting in `file` (none when it is missing or unreadable). */
export function waitingSessions(file: string): KeptSession[] {
  try {
    const kept = JSON.parse(readFileSync(file, "utf8")) as unknown;
    return Array.isArray(kept) ? (kept as KeptSession[]) : [];
  } catch {
    return [];
  }
}

/** Writes `record` into `file` (replacing the same session's earlier state), whole and synchronously. */
function keep(file: string, record: KeptSession): void {
  const sessions = waitingSessions(file).filter((s) => s.id !== record.id);
  sessions.push(record);
  write(file, sessions.slice(-MAX_KEPT_SESSIONS));
}

function write(file: string, sessions: KeptSession[]): void {
  const temporary = `${file}.${crypto.randomUUID()}.tmp`;
  writeFileSync(temporary, JSON.stringify(sessions));
  renameSync(temporary, file);
}

/**
 * Sends the waiting sessions in batches; those the service took are no longer kept, except one still `started` (its
 * end is sent later). A refusal of the request itself (4xx: a malformed session) drops that batch, which would be
 * refused again; an unreachable service or a 5xx keeps it.
 */
async function send(options: SessionTrackingOptions, file: string): Promise<number> {
  const fetch = options.fetch ?? globalThis.fetch;
  const url = new URL(
    `/v1/updates/${encodeURIComponent(options.productCode)}/sessions`,
    options.baseUrl.replace(/\/?$/, "/"),
  );
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "x-service-install-id": options.installId,
    ...(options.userKey ? { "x-service-user-key": options.userKey } : {}),
  };
  let taken = 0;
  // One request per version (and platform) and batch: each session is counted for the release that ran it.
  const groups = new Map<string, KeptSession[]>();
  for (const s of waitingSessions(file)) {
    const key = `${s.version}\n${s.platform ?? ""}`;
    groups.set(key, [...(groups.get(key) ?? []), s]);
  }
  for (const group of groups.values())
    for (let at = 0; at < group.length; at += BATCH) {
      const batch = group.slice(at, at + BATCH);
      const { version, platform } = batch[0]!;
      let status: number;
      try {
        const res = await fetch(url.href, {
          method: "POST",
          headers,
          body: JSON.stringify({
            version,
            ...(platform ? { platform } : {}),
            sessions: batch.map(({ id, status, startedAt, durationMs }) => ({
              id,
              status,
              startedAt,
              ...(durationMs !== undefined ? { durationMs } : {}),
            })),
          }),
        });
        status = res.status;
        if (res.ok) taken += ((await res.json()) as { accepted?: number }).accepted ?? 0;
      } catch {
        return taken; // unreachable: everything waits
      }
      if (status >= 500 || status === 429) return taken;
      // Taken (or refused for good): no longer kept, but a session still running stays for its end.
      const done = new Set(batch.filter((s) => s.status !== "started").map((s) => s.id));
      write(
        file,
        waitingSessions(file).filter((s) => !done.has(s.id)),
      );
    }
  return taken;
}
