/**
 * Vitest global setup (runs in Node, once per run): a small fake geolocation service on 127.0.0.1 with a random
 * port, so the Worker's geolocation lookups are tested over real HTTP. Its address reaches the Worker as the
 * `Application__GeoLocationService` binding (vitest.config.ts, through `inject`).
 *
 *   GET /geo/{ip}     CONTRACT's shape {country, region, city, latitude, longitude, timezone}; 404 for unknown IPs
 *   GET /ipapi/{ip}   ip-api.com's shape {status, country, regionName, city, lat, lon, timezone}
 *   GET /slow/{ip}    answers after 3 s (timeouts)
 *   GET /text/{ip}    200 with a body that is not JSON
 *   GET /fail/{ip}    503
 *   GET /lookups      the IPs looked up so far (JSON array), to count requests
 *
 * And the webhook receiver of test/webhook-receiver.ts (`inject("webhookReceiverUrl")`).
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import { type WebhookReceiver, startWebhookReceiver } from "./webhook-receiver";

declare module "vitest" {
  export interface ProvidedContext {
    /** Base URL of the fake geolocation service, e.g. `http://127.0.0.1:41234`. */
    geoServiceUrl: string;
    /** Base URL of the webhook receiver (test/webhook-receiver.ts): behaviour by path, deliveries read back over HTTP. */
    webhookReceiverUrl: string;
  }
}

/** The addresses the fake service knows, in CONTRACT's geoLocation shape. */
export const KNOWN_PLACES: Record<
  string,
  { country: string; region: string; city: string; latitude: number; longitude: number; timezone: string }
> = {
  "203.0.113.7": {
    country: "NO",
    region: "Oslo",
    city: "Oslo",
    latitude: 59.91,
    longitude: 10.75,
    timezone: "Europe/Oslo",
  },
  "198.51.100.4": {
    country: "JP",
    region: "Tokyo",
    city: "Tokyo",
    latitude: 35.68,
    longitude: 139.69,
    timezone: "Asia/Tokyo",
  },
  "2001:db8::1": {
    country: "DE",
    region: "Berlin",
    city: "Berlin",
    latitude: 52.52,
    longitude: 13.4,
    timezone: "Europe/Berlin",
  },
};

const lookups: string[] = [];

function answer(res: ServerResponse, status: number, body: unknown, type = "application/json"): void {
  res.writeHead(status, { "content-type": type });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
}

function handle(req: IncomingMessage, res: ServerResponse): void {
  const [, kind = "", raw = ""] = /^\/([^/]+)\/?(.*)$/.exec(req.url ?? "") ?? [];
  const ip = decodeURIComponent(raw);
  if (kind === "lookups") return answer(res, 200, lookups);
  lookups.push(ip);
  const place = KNOWN_PLACES[ip];
  switch (kind) {
    case "geo":
      return place ? answer(res, 200, place) : answer(res, 404, { error: `unknown address ${ip}` });
    case "ipapi":
      return place
        ? answer(res, 200, {
            status: "success",
            country: place.country,
            regionName: place.region,
            city: place.city,
            lat: place.latitude,
            lon: place.longitude,
            timezone: place.timezone,
          })
        : answer(res, 200, { status: "fail", message: "reserved range" });
    case "slow":
      setTimeout(() => answer(res, 200, place ?? {}), 3000);
      return;
    case "text":
      return answer(res, 200, "<html>not json</html>", "text/html");
    case "fail":
      return answer(res, 503, { error: "maintenance" });
    default:
      return answer(res, 404, { error: "no such route" });
  }
}

let server: Server | undefined;
let receiver: WebhookReceiver | undefined;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  server = createServer(handle);
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  project.provide("geoServiceUrl", `http://127.0.0.1:${port}`);
  receiver = await startWebhookReceiver();
  project.provide("webhookReceiverUrl", receiver.url);
  return async () => {
    await receiver?.close();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
  };
}
