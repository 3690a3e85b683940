/**
 * A real HTTP webhook receiver on 127.0.0.1 (Node), for the delivery tests (started by test/global-setup.ts) and the
 * end-to-end check under `wrangler dev` (test/e2e/webhooks.mjs). Each POST is recorded (path, headers, exact body)
 * and answered by the behaviour its first path segment names, so a test picks one per subscription URL:
 *
 *   /ok/...           200 {"received":true}
 *   /fail500/...      500
 *   /gone410/...      410 Gone
 *   /redirect302/...  302 to /ok/redirected (a delivery must not follow it)
 *   /slow/...?ms=N    200 after N ms (default 2000): for timeouts
 *   /big/...          200 with a 5 KB body (the stored response keeps the first 2 KB)
 *
 *   GET /deliveries?prefix=/ok/x   the recorded deliveries whose path starts with the prefix (JSON array)
 *
 * Written in the TypeScript Node runs as is (type annotations only), so the .mjs end-to-end script imports it too.
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";

/** One delivery as the receiver saw it. */
export interface ReceivedDelivery {
  method: string;
  path: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
  receivedAt: number;
}

export interface WebhookReceiver {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  deliveries: ReceivedDelivery[];
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function reply(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  if (res.destroyed) return;
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(body);
}

function behave(url: URL, res: ServerResponse): void {
  switch (url.pathname.split("/")[1]) {
    case "ok":
      return reply(res, 200, '{"received":true}');
    case "fail500":
      return reply(res, 500, '{"error":"receiver failed"}');
    case "gone410":
      return reply(res, 410, '{"error":"this endpoint is gone"}');
    case "redirect302":
      return reply(res, 302, "", { location: "/ok/redirected" });
    case "slow":
      setTimeout(() => reply(res, 200, '{"received":"late"}'), Number(url.searchParams.get("ms") ?? 2000));
      return;
    case "big":
      return reply(res, 200, JSON.stringify({ padding: "x".repeat(5000) }));
    default:
      return reply(res, 404, '{"error":"no such behaviour"}');
  }
}

/** Starts a receiver on 127.0.0.1 with a free port. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const deliveries: ReceivedDelivery[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://receiver");
    if (req.method === "GET" && url.pathname === "/deliveries") {
      const prefix = url.searchParams.get("prefix") ?? "/";
      return reply(res, 200, JSON.stringify(deliveries.filter((d) => d.path.startsWith(prefix))));
    }
    readBody(req).then(
      (body) => {
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : (v ?? "")]),
        );
        deliveries.push({
          method: req.method ?? "",
          path: url.pathname + url.search,
          headers,
          body,
          receivedAt: Date.now(),
        });
        behave(url, res);
      },
      () => reply(res, 400, '{"error":"unreadable body"}'),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    deliveries,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
