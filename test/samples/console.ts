/** Sample requests of the admin console's sign-in and sign-out (src/routes/auth/console.ts). */
import { ADMIN } from "../helpers";
import type { Samples } from "./kit";

export const consoleSamples: Samples = {
  "POST /v1/auth/console/login": async () => ({ body: { username: ADMIN.username, password: ADMIN.password } }),
  // Without a session cookie there is nothing to sign out: 200.
  "POST /v1/auth/console/logout": async () => ({}),
};
