/**
 * What a customer does in the customer portal (CONTRACT section 12), free of HTTP: sign in (a user key, or a one-time
 * link by email), read their licenses with machines and seats, free a machine (at most
 * Licensing:MaxDeactivationsPerMonth per license and calendar month, counted in the license's Durable Object), read
 * their orders and change the licensee name on a license. Every read and write is limited to the session's scope
 * (portal-session.ts): another customer's license, machine or order is answered exactly as one that does not exist.
 * Changes go through the services the Management API and licensing runtime use (license-writes.ts, activation.ts),
 * so integrity HMACs, webhooks, traces and audit entries follow, naming the customer as the actor.
 */
import { and, asc, eq, gt, inArray, isNull, sql } from "drizzle-orm";
import { clock } from "../kernel/clock";
import { batchReads } from "../db/compiled";
import { tokenIsLive } from "../db/rules";
import { customers, licenseTokens, licenses, orderProducts, orders, products } from "../db/schema";
import type { PortalScope } from "../http/app-env";
import type { ClientInfo, ServiceContext } from "../http/context";
import { ApiError, LicensingError } from "../kernel/errors";
import { sendMail } from "../mail/send";
import { USER_KEY_ATTEMPT, protectLogin } from "../protection/limits";
import { DEACTIVATIONS_RESET_HEADER, deactivate, monthOf } from "../licensing/activation";
import { changeLicense } from "../licensing/license-writes";
import type { LicenseRow } from "../licensing/license-core";
import { judgeLicense } from "../licensing/policy";
import { licenseByUserKey } from "../licensing/license-lookup";
import { type TypedKey, typedKey } from "../licensing/user-key";
import { httpUrl } from "../records/products";
import { EMAIL_ADDRESS, LICENSE_TYPES, LICENSING_MODES, Mode, TokenKind } from "../records/vocabulary";
import { OrderStatus, PaymentStatus } from "../records/orders";
import { maintenanceEnd } from "../delivery/catalog";
import { CROCKFORD32 } from "../kernel/crypto";
import { type SessionFor, newLinkToken } from "./portal-session";
import { portalCredentials } from "../db/schema";

// ---------------------------------------------------------------------------------------------------------------
// Sign-in

/** The one answer of a user key that signs in to nothing (unknown, revoked, deleted, tampered): no hint which. */
export const KEY_SIGNS_IN_TO_NOTHING = "This user key does not sign in to the customer portal.";
export const MALFORMED_USER_KEY =
  "The user key is malformed: type the key of your license as it was sent to you (letters and digits, such as XXXXX-XXXXX-XXXXX-XXXXX-XXXXX).";
export const MALFORMED_EMAIL = "The email address is malformed: type it as name@example.com.";
/** The answer to every email sign-in, whether or not a customer has that address (no enumeration). */
export const LINK_SENT = "If a customer account has this email address, a sign-in link is on its way to it.";

const CROCKFORD = new Set(CROCKFORD32);

/**
 * A typed key read both ways (licensing/user-key.ts typedKey), or 400 when it can be neither a user key (wrong
 * characters, too short or long) nor a legacy key.
 */
async function typedUserKey(typed: string): Promise<TypedKey> {
  const key = await typedKey(typed);
  const compact = key.compact.length >= 8 && [...key.compact].every((ch) => CROCKFORD.has(ch)) ? key.compact : "";
  if (compact === "" && key.legacy === "") throw new ApiError(400, MALFORMED_USER_KEY);
  return { compact, legacy: key.legacy };
}

/** A typed email address, trimmed, or 400. */
export function typedEmail(typed: string): string {
  const email = typed.trim();
  if (email.length > 254 || !EMAIL_ADDRESS.test(email)) throw new ApiError(400, MALFORMED_EMAIL);
  return email;
}

/**
 * Who a user key signs in: its license's customer (every license of theirs), or the license alone when it has no
 * customer. A revoked, deleted or tampered license signs in to nothing (401, counted like a failed login); an expired
 * one signs in (its customer may want the renewal link).
 */
export async function signInWithKey(ctx: ServiceContext, typed: string): Promise<SessionFor> {
  const key = await typedUserKey(typed);
  return protectLogin(ctx, USER_KEY_ATTEMPT, async () => {
    const [[row]] = await batchReads(ctx.db, [licenseByUserKey(key)]);
    const verdict = await judgeLicense(ctx.config["Application:EncryptionKey"], row?.license, clock.now());
    if (!row || (!verdict.usable && verdict.refusal !== "expired")) throw new ApiError(401, KEY_SIGNS_IN_TO_NOTHING);
    const actor = { ...ctx, principal: { kind: "customer", customerId: row.license.customerId ?? undefined } };
    ctx.log?.audit("PortalSignIn", `Customer portal sign-in with the user key of ${row.license.licenseId}`, actor, {
      licenseId: row.license.licenseId,
      customerId: row.license.customerId,
      with: "userKey",
    });
    return { customerId: row.license.customerId, licenseId: row.license.id };
  });
}

/** Most unused, unexpired sign-in links a customer has at once. */
const MAX_LIVE_LINKS = 3;

/** Most customer records one email sign-in sends links for (customers' emails are not unique). */
const MAX_LINKS = 5;

/**
 * Sends a one-time sign-in link (valid Portal:SignInLinkMinutes) for each customer with this email address, in one
 * message; nothing for an unknown address. `origin` is the service's public origin the links start with. The caller
 * answers the same either way (LINK_SENT) and runs this after answering, so neither the answer nor its timing tells
 * whether the address is known.
 */
export async function sendSignInLinks(ctx: ServiceContext, email: string, origin: string): Promise<void> {
  const found = await ctx.db
    .select({ id: customers.id, code: customers.code, email: customers.email })
    .from(customers)
    .where(sql`lower(${customers.email}) = lower(${email})`)
    .orderBy(asc(customers.id))
    .limit(MAX_LINKS);
  if (found.length === 0) return;
  const now = clock.now();
  // At most MAX_LIVE_LINKS unused, unexpired links per address: asking again (from any address, any IP) sends
  // nothing more until one is used or expires, so no one can flood a customer's inbox with live sign-in links.
  const [live] = await ctx.db
    .select({ n: sql<number>`count(*)` })
    .from(portalCredentials)
    .where(
      and(
        inArray(
          portalCredentials.customerId,
          found.map((c) => c.id),
        ),
        eq(portalCredentials.kind, "link"),
        isNull(portalCredentials.usedAt),
        gt(portalCredentials.expiresAt, now.toISOString()),
      ),
    );
  if ((live?.n ?? 0) >= MAX_LIVE_LINKS * found.length) {
    ctx.log?.warning(`Customer portal: no sign-in link sent, ${MAX_LIVE_LINKS} are already live for this address`, {
      properties: { customers: found.map((c) => c.id) },
    });
    return;
  }
  const minutes = ctx.config["Portal:SignInLinkMinutes"];
  const expiresAt = new Date(now.getTime() + minutes * 60_000).toISOString();
  const links = await Promise.all(found.map(async (customer) => ({ customer, ...(await newLinkToken()) })));
  await ctx.db.insert(portalCredentials).values(
    links.map((l) => ({
      digest: l.digest,
      kind: "link" as const,
      customerId: l.customer.id,
      expiresAt,
      createdAt: now.toISOString(),
    })),
  );
  const title = ctx.config["Portal:Title"];
  const lines = links.map((l) =>
    links.length > 1
      ? `Account ${l.customer.code}: ${origin}/v1/portal/sign-in/${l.token}`
      : `${origin}/v1/portal/sign-in/${l.token}`,
  );
  await sendMail(
    { db: ctx.db, config: ctx.config, transport: ctx.env.EMAIL },
    {
      to: found[0]!.email ?? email,
      subject: `${title}: your sign-in link`,
      body: [
        `Open this link to sign in to ${title}:`,
        "",
        ...lines,
        "",
        `The link works once and expires in ${minutes} minutes. If you did not ask for it, ignore this message.`,
      ].join("\n"),
      isHtml: false,
      secrets: links.map((l) => l.token),
    },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Licenses

/** The session's licenses as an SQL condition: its customer's, or its one license; never a revoked one. */
function inScope(scope: PortalScope) {
  const whose =
    scope.customerId !== null ? eq(licenses.customerId, scope.customerId) : eq(licenses.id, scope.licenseRowId ?? -1);
  return and(whose, eq(licenses.revoked, false));
}

type ProductPart = { code: string; name: string; renewalUrl: string | null; purchaseUrl: string | null };
export type OwnLicense = LicenseRow & { product: ProductPart };

const productPart = {
  code: products.code,
  name: products.name,
  renewalUrl: products.renewalUrl,
  purchaseUrl: products.purchaseUrl,
};

/** 404 for a license the session does not open: the same answer whether it is another customer's or none at all. */
export const licenseNotFound = (licenseId: string) => new ApiError(404, `License ${licenseId} not found`);

/** A license of the session's scope by its public id (lic…), with its product; 404 otherwise. */
export async function ownLicense(ctx: ServiceContext, scope: PortalScope, licenseId: string): Promise<OwnLicense> {
  const row = await ctx.db
    .select({ license: licenses, product: productPart })
    .from(licenses)
    .innerJoin(products, eq(products.id, licenses.productId))
    .where(and(eq(licenses.licenseId, licenseId), inScope(scope)))
    .get();
  if (!row) throw licenseNotFound(licenseId);
  return { ...row.license, product: row.product };
}

/**
 * The user key a session may see: every key in a session an emailed link opened (it proved the customer's address),
 * but in one a user key opened, only that key in full: any key of a customer, an expired one's included, would
 * otherwise hand out the keys of all their licenses. Others show their last group only, to tell them apart.
 */
function shownKey(scope: PortalScope, row: Pick<OwnLicense, "id" | "userKey">): string {
  if (scope.signedInWith === "email" || scope.keyLicenseRowId === row.id) return row.userKey;
  const groups = row.userKey.split("-");
  return groups.length > 1
    ? [...groups.slice(0, -1).map((g) => "•".repeat(g.length)), groups.at(-1)].join("-")
    : "•••••";
}

/** A license as the portal shows it. */
function licenseView(scope: PortalScope, row: OwnLicense, activeClientCount: number) {
  const now = clock.now().getTime();
  return {
    licenseId: row.licenseId,
    userKey: shownKey(scope, row),
    product: { code: row.product.code, name: row.product.name },
    edition: row.edition,
    licenseType: LICENSE_TYPES[row.licenseType] ?? "Standard",
    licensingMode: LICENSING_MODES[row.licensingMode] ?? "File",
    maxClients: row.maxClients,
    activeClientCount,
    issueDate: row.issueDate,
    expireDate: row.expireDate,
    expired: row.expireDate !== null && Date.parse(row.expireDate) <= now,
    supportExpireDate: row.supportExpireDate,
    maintenanceUntil: maintenanceEnd(row),
    licenseeName: row.licenseeName,
    // Only an http(s) link reaches a customer, whatever was stored before products kept to it.
    renewalUrl: httpUrl(row.product.renewalUrl),
    purchaseUrl: httpUrl(row.product.purchaseUrl),
  };
}
export type PortalLicenseView = ReturnType<typeof licenseView>;

/** The session's licenses, with their active machines or seats counted (two statements, one round trip). */
export async function listLicenses(ctx: ServiceContext, scope: PortalScope): Promise<PortalLicenseView[]> {
  const now = clock.now().toISOString();
  const [rows, counts] = await ctx.db.batch([
    ctx.db
      .select({ license: licenses, product: productPart })
      .from(licenses)
      .innerJoin(products, eq(products.id, licenses.productId))
      .where(inScope(scope))
      .orderBy(asc(licenses.id)),
    ctx.db
      .select({
        licenseId: licenseTokens.licenseId,
        tokens: sql<number>`count(*)`,
        machines: sql<number>`count(DISTINCT ${licenseTokens.machineId})`,
      })
      .from(licenseTokens)
      .innerJoin(licenses, eq(licenses.id, licenseTokens.licenseId))
      .where(and(inScope(scope), tokenIsLive(now)))
      .groupBy(licenseTokens.licenseId),
  ]);
  const byLicense = new Map(counts.map((c) => [c.licenseId, c]));
  return rows.map((r) => {
    const c = byLicense.get(r.license.id);
    const active = !c ? 0 : r.license.licensingMode === Mode.Activation ? c.machines : c.tokens;
    return licenseView(scope, { ...r.license, product: r.product }, active);
  });
}

/** One license with its activated machines and live floating seats, and its deactivations this month. */
export async function licenseDetail(ctx: ServiceContext, scope: PortalScope, licenseId: string) {
  const license = await ownLicense(ctx, scope, licenseId);
  const now = clock.now();
  const tokens = await ctx.db
    .select()
    .from(licenseTokens)
    .where(and(eq(licenseTokens.licenseId, license.id), tokenIsLive(now.toISOString())))
    .orderBy(asc(licenseTokens.id));
  const client = (t: (typeof tokens)[number]) => ({
    machineId: t.machineId ?? "",
    clientId: t.clientId || null,
    clientName: t.clientName,
    since: t.issueDate,
    lastSeenAt: t.lastHeartbeat ?? t.updatedAt,
    expiresAt: t.expireDate,
  });
  const machines = tokens.filter((t) => t.kind === TokenKind.Activation).map(client);
  const seats = tokens.filter((t) => t.kind === TokenKind.Floating).map(client);
  const active =
    license.licensingMode === Mode.Activation ? new Set(machines.map((m) => m.machineId)).size : seats.length;
  return {
    ...licenseView(scope, license, active),
    machines,
    seats,
    deactivations: await deactivationsOf(ctx, license.id, now),
  };
}

/** A license's portal deactivations this month: used, the limit (0 = none) and when the count resets. */
async function deactivationsOf(ctx: ServiceContext, licenseRowId: number, now: Date) {
  const { month, resetsAt } = monthOf(now);
  const used = await ctx.env.LICENSE_SEATS.getByName(String(licenseRowId)).deactivations(month);
  return { used, limit: ctx.config["Licensing:MaxDeactivationsPerMonth"], resetsAt };
}

export { DEACTIVATIONS_RESET_HEADER };

/**
 * Frees a machine of one of the session's licenses through the licensing runtime's deactivation (its trace and
 * license.deactivated event follow), counted against Licensing:MaxDeactivationsPerMonth in the license's Durable
 * Object first: over it, 429 with the date the count resets. A machine the license has no live activation for
 * answers 404 and counts nothing.
 */
export async function deactivateMachine(
  ctx: ServiceContext,
  scope: PortalScope,
  licenseId: string,
  machineId: string,
  client: ClientInfo,
) {
  const license = await ownLicense(ctx, scope, licenseId);
  const now = clock.now();
  const held = await ctx.db
    .select({ id: licenseTokens.id })
    .from(licenseTokens)
    .where(
      and(
        eq(licenseTokens.licenseId, license.id),
        eq(licenseTokens.kind, TokenKind.Activation),
        eq(licenseTokens.machineId, machineId),
        tokenIsLive(now.toISOString()),
      ),
    )
    .limit(1);
  if (held.length === 0) throw new ApiError(404, `Machine ${machineId} is not activated on license ${licenseId}`);
  // Counted against Licensing:MaxDeactivationsPerMonth by the deactivation itself, as an application's is.
  let result;
  try {
    result = await deactivate(ctx, { userKey: license.userKey, machineId }, client);
  } catch (e) {
    if (!(e instanceof LicensingError) || e.reason !== "deactivationLimit") throw e;
    // Over the limit: the portal answers 429 with the reset date, as it always has.
    const limit = ctx.config["Licensing:MaxDeactivationsPerMonth"];
    const resetsAt = e.headers[DEACTIVATIONS_RESET_HEADER] ?? monthOf(now).resetsAt;
    throw new ApiError(
      429,
      `License ${licenseId} has used its ${limit} machine deactivations this month; more are possible from ${resetsAt.slice(0, 10)} (UTC).`,
      e.headers,
      "deactivationLimit",
    );
  }
  ctx.log?.audit(
    "PortalMachineDeactivated",
    `Machine ${machineId} of ${licenseId} deactivated in the customer portal`,
    ctx,
    {
      licenseId,
      machineId,
    },
  );
  return {
    licenseId,
    machineId,
    activeClientCount: result.activeClientCount,
    maxClientCount: result.maxClientCount,
    deactivations: await deactivationsOf(ctx, license.id, now),
  };
}

/** Changes the licensee name of one of the session's licenses, as PUT /v1/licenses does (HMAC, webhooks, audit). */
export async function changeLicenseeName(ctx: ServiceContext, scope: PortalScope, licenseId: string, name: string) {
  const license = await ownLicense(ctx, scope, licenseId);
  const licenseeName = name.trim();
  if (licenseeName === "" || licenseeName.length > 256)
    throw new ApiError(400, "The licensee name must be 1 to 256 characters.");
  const row = (await changeLicense(ctx, license.id, { licenseeName })) as LicenseRow;
  ctx.log?.audit("PortalLicenseeChanged", `Licensee of ${licenseId} changed in the customer portal`, ctx, {
    licenseId,
    previous: license.licenseeName,
    licenseeName,
  });
  return licenseView(scope, { ...row, product: license.product }, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Orders

/** The orders of the session's customer with their lines (none for a license with no customer). */
export async function listOrders(ctx: ServiceContext, scope: PortalScope) {
  if (scope.customerId === null) return [];
  const rows = await ctx.db
    .select()
    .from(orders)
    .where(eq(orders.customerId, scope.customerId))
    .orderBy(asc(orders.id));
  const ids = rows.map((o) => o.id);
  const lines =
    ids.length === 0
      ? []
      : await ctx.db
          .select({ line: orderProducts, product: { code: products.code, name: products.name } })
          .from(orderProducts)
          .innerJoin(products, eq(products.id, orderProducts.productId))
          .where(inArray(orderProducts.orderId, ids))
          .orderBy(asc(orderProducts.id));
  return rows.map((o) => ({
    orderNumber: o.orderNumber,
    status: OrderStatus[o.status] ?? "Pending",
    paymentStatus: PaymentStatus[o.paymentStatus] ?? "Unpaid",
    total: o.total,
    currency: o.currency,
    invoiceNumber: o.invoiceNumber,
    paymentDate: o.paymentDate,
    createdAt: o.createdAt,
    lines: lines
      .filter((l) => l.line.orderId === o.id)
      .map((l) => ({
        product: l.product,
        quantity: l.line.quantity,
        unitPrice: l.line.unitPrice,
        description: l.line.description,
      })),
  }));
}

/** The session's customer as the page greets them (null for a license with no customer). */
export async function sessionCustomer(ctx: ServiceContext, scope: Pick<PortalScope, "customerId">) {
  if (scope.customerId === null) return null;
  const c = await ctx.db.select().from(customers).where(eq(customers.id, scope.customerId)).get();
  if (!c) return null;
  const name = c.company ?? ([c.firstName, c.lastName].filter(Boolean).join(" ") || c.code);
  return { code: c.code, name, email: c.email };
}
