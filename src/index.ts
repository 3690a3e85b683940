export default {
  async fetch(): Promise<Response> {
    return new Response("starting", { status: 503 });
  },
};
export { RateLimiter } from "./durable/rate-limiter";
export { LicenseSeats } from "./durable/license-seats";
