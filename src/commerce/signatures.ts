/**
 * Each provider's own webhook signature, checked over the raw body before anything is parsed or written
 * (CONTRACT section 10). A refusal is `SignatureRefused` with the reason (answered 400, nothing written).
 *   Stripe        `Stripe-Signature: t=…,v1=…`: the official SDK (`stripe.webhooks.constructEventAsync` with the Web
 *                 Crypto provider), HMAC-SHA256 of `t.body`, 300 s tolerance (Stripe's default)
 *   Paddle        `Paddle-Signature: ts=…;h1=…` (several h1 while a secret is rotated): HMAC-SHA256 of `ts:body`,
 *                 hex; 5 s tolerance as Paddle's SDK (@paddle/paddle-node-sdk needs node:crypto, which this Worker
 *                 does not enable, so the documented scheme is implemented here)
 *   Lemon Squeezy `X-Signature`: hex HMAC-SHA256 of the body; the scheme signs no time, so no tolerance applies
 *                 (a replayed body is the same event: provider-events.ts readLemonSqueezy)
 */
import type Stripe from "stripe";
import { timingSafeEqualText, toHex } from "../kernel/crypto";
import { memo } from "../kernel/memo";
import type { Provider } from "./provider-events";

/** Stripe's default tolerance for `t=` (seconds). */
export const STRIPE_TOLERANCE_SECONDS = 300;
/** Paddle's SDK tolerance for `ts=` (seconds): Paddle signs each delivery attempt afresh. */
export const PADDLE_TOLERANCE_SECONDS = 5;

export class SignatureRefused extends Error {}

const encoder = new TextEncoder();

async function hmacSha256Hex(secret: string, message: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return toHex(await crypto.subtle.sign("HMAC", key, encoder.encode(message)));
}

// The SDK only verifies signatures here (no API key, no request ever made). It is loaded on the first Stripe event,
// not at isolate start: the bundle keeps it (about 720 KiB, 85 KiB gzipped), but the hot paths never evaluate it.
type StripeSdk = { client: Stripe; crypto: ReturnType<typeof Stripe.createSubtleCryptoProvider> };
const stripeSdk = memo<"sdk", Promise<StripeSdk>>("stripe-sdk", {
  key: "the one SDK object of the isolate",
  max: 1,
  lifetime: "the isolate (forgotten when loading failed)",
});

function loadStripe(): Promise<StripeSdk> {
  let sdk = stripeSdk.get("sdk");
  if (!sdk) {
    sdk = import("stripe").then(({ default: StripeSdk }) => ({
      client: new StripeSdk("sk_unused_signature_checks_only"),
      crypto: StripeSdk.createSubtleCryptoProvider(),
    }));
    sdk.catch(() => stripeSdk.delete("sdk"));
    stripeSdk.keep("sdk", sdk);
  }
  return sdk;
}

async function verifyStripe(body: string, headers: Headers, secret: string, now: Date): Promise<void> {
  const header = headers.get("stripe-signature");
  if (!header) throw new SignatureRefused("The Stripe-Signature header is missing");
  const stripe = await loadStripe();
  try {
    await stripe.client.webhooks.constructEventAsync(
      body,
      header,
      secret,
      STRIPE_TOLERANCE_SECONDS,
      stripe.crypto,
      // receivedAt is in milliseconds (the SDK divides it by 1000); seconds here would accept any old timestamp.
      now.getTime(),
    );
  } catch (e) {
    // The SDK parses the body after a good signature: a body that is not JSON is the caller's MalformedBody.
    if (e instanceof SyntaxError) return;
    throw new SignatureRefused(
      `Stripe signature refused: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`,
    );
  }
}

async function verifyPaddle(body: string, headers: Headers, secret: string, now: Date): Promise<void> {
  const header = headers.get("paddle-signature");
  if (!header) throw new SignatureRefused("The Paddle-Signature header is missing");
  let ts: string | undefined;
  const h1: string[] = [];
  for (const part of header.split(";")) {
    const [key, value] = part.split("=", 2).map((s) => s.trim());
    if (key === "ts" && value) ts = value;
    if (key === "h1" && value) h1.push(value.toLowerCase());
  }
  if (!ts || !/^\d{1,12}$/.test(ts) || h1.length === 0)
    throw new SignatureRefused("The Paddle-Signature header is not ts=…;h1=…");
  const age = now.getTime() / 1000 - Number(ts);
  if (Math.abs(age) > PADDLE_TOLERANCE_SECONDS)
    throw new SignatureRefused(
      `The Paddle-Signature timestamp is ${Math.round(age)} s from now (tolerance ${PADDLE_TOLERANCE_SECONDS} s)`,
    );
  const expected = await hmacSha256Hex(secret, `${ts}:${body}`);
  if (!h1.some((candidate) => timingSafeEqualText(candidate, expected)))
    throw new SignatureRefused("The Paddle-Signature does not match the body");
}

async function verifyLemonSqueezy(body: string, headers: Headers, secret: string): Promise<void> {
  const header = headers.get("x-signature");
  if (!header) throw new SignatureRefused("The X-Signature header is missing");
  const expected = await hmacSha256Hex(secret, body);
  if (!timingSafeEqualText(header.trim().toLowerCase(), expected))
    throw new SignatureRefused("The X-Signature does not match the body");
}

/** Checks the provider's signature of `body`; throws SignatureRefused. */
export function verifySignature(provider: Provider, body: string, headers: Headers, secret: string, now: Date) {
  switch (provider) {
    case "stripe":
      return verifyStripe(body, headers, secret, now);
    case "paddle":
      return verifyPaddle(body, headers, secret, now);
    case "lemonsqueezy":
      return verifyLemonSqueezy(body, headers, secret);
  }
}
