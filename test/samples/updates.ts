/** Sample requests for the update routes and their keys. */
import type { Samples } from "./kit";

export const updateSamples: Samples = {
  "GET /v1/extensions/keys": async () => ({}),
};
