/**
 * The front door of the session pings (CONTRACT section 13): an install's anonymous `POST
 * /v1/updates/{productCode}/sessions` is taken before the app is entered, when the isolate trusts what it remembers
 * of the product (delivery/product-memo.ts) and every pre-route gate of the app (PRE_ROUTE, the list the app runs)
 * leaves it alone. The ping is checked by the route's own schema and rules (routes/updates/sessions.ts: the body,
 * pingProblem) and taken by the route's own takePing, so the answer is the route's: 202 with the number of sessions
 * taken, no-store (as noStoreByDefault marks it), Server-Timing (no D1 work) when it is on. Anything else goes through
 * the app: a ping with a credential, a product the isolate does not trust, a body the app answers with an error (the
 * app reads the same text again), a reply in TOON.
 */
import { namesUserKey } from "../delivery/caller";
import { rememberedProduct } from "../delivery/product-memo";
import { INSTALL_ID_HEADER } from "../http/context";
import { serverTimingOn } from "../http/d1-session";
import { clock } from "../kernel/clock";
import { SESSIONS_PATH, SessionPingBody, pingProblem, takePing } from "../routes/updates/sessions";
import { NO_D1_WORK, PRE_ROUTE, type PreRouteGate, allQuiet, openDoor } from "./app";

/** A JSON body the front door reads (as the app's JSON media types, TOON replies aside). */
const JSON_BODY = /^\s*application\/json\s*(;|$)/i;

/**
 * The answer to an anonymous session ping, or the request for the app to answer (the same request, or a copy carrying
 * the body the front door read), or undefined when it is not an anonymous ping.
 */
export async function pingDoor(
  request: Request,
  env: Bindings,
  ctx: ExecutionContext,
  preRoute: readonly PreRouteGate[] = PRE_ROUTE,
): Promise<Response | Request | undefined> {
  if (request.method !== "POST") return undefined;
  const url = new URL(request.url);
  const code = SESSIONS_PATH.exec(url.pathname)?.[1];
  const headers = request.headers;
  if (code === undefined || headers.has("authorization") || namesUserKey(headers, url)) return undefined;
  if (!JSON_BODY.test(headers.get("content-type") ?? "") || (headers.get("accept") ?? "").includes("toon"))
    return undefined;
  const now = clock.now();
  let productCode: string;
  try {
    productCode = decodeURIComponent(code);
  } catch {
    return undefined;
  }
  const remembered = rememberedProduct(productCode, now.getTime());
  if (remembered === undefined) return undefined;
  const door = await openDoor(request, env, url, now.getTime());
  const product = await remembered;
  if (!product || !(await allQuiet(door, preRoute))) return undefined;
  const text = await request.text();
  const again = () => new Request(request, { body: text });
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return again();
  }
  const body = SessionPingBody.safeParse(parsed);
  const install = headers.get(INSTALL_ID_HEADER) ?? undefined;
  if (!body.success || pingProblem(install, body.data, now)) return again();
  const accepted = takePing(
    { env, waitUntil: (promise) => ctx.waitUntil(promise) },
    product.id,
    install!,
    body.data,
    await door.clientIp(),
    false,
  );
  const res = new Response(JSON.stringify({ success: true, code: 0, accepted }), {
    status: 202,
    headers: { "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store" },
  });
  if (serverTimingOn(door.config)) res.headers.append("Server-Timing", NO_D1_WORK);
  return res;
}
