// Where `npm run dev` says mail goes (issue 37, "mail and first steps"): without an EMAIL send_email binding nothing is
// sent, and the license email and the portal's sign-in link exist only in the outbox (the console's Outbox page);
// with one, mail goes out through it. The answer comes from the running service (`GET /v1/info`, `features.email`),
// so what is printed is what the Worker does, whatever wrangler.toml or the command line bound.

/**
 * The line to print, from `GET /v1/info`'s `features` (undefined when it could not be read) and the service's base
 * URL.
 * @param {{ email?: string } | undefined} features
 * @param {string} base
 * @returns {string}
 */
export function mailLine(features, base) {
  const outbox = `${base}/console/#/outbox`;
  if (features?.email === "binding")
    return `Mail: sent through the EMAIL binding from Email:From (records in the console's Outbox: ${outbox})`;
  if (features?.email === "outbox")
    return `Mail: no EMAIL binding, nothing is sent: every email (license keys, portal sign-in links) waits in the Outbox: ${outbox}  (docs/email.md)`;
  return `Mail: see the console's Outbox, ${outbox} (docs/email.md)`;
}
