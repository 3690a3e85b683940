/**
 * The D1 schema of every record of SPEC.md and CONTRACT.md section 3. drizzle-kit generates `migrations/` from it
 * (`npm run db:generate`). Conventions: integer keys, camelCase in TypeScript and snake_case in SQL, dates as ISO
 * 8601 UTC text (`yyyy-MM-ddTHH:mm:ss.fffZ`, so text order is time order and filters compare ISO strings),
 * booleans as 0/1, enumerations as integers, arrays and free-form objects as JSON text. Secrets are stored as
 * digests or encrypted, never in the clear.
 */
import { sql } from "drizzle-orm";
import { blob, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

const id = () => integer("id").primaryKey({ autoIncrement: true });
const createdAt = () => text("created_at").notNull();
const updatedAt = () => text("updated_at").notNull();
const bool = (name: string) => integer(name, { mode: "boolean" });
const json = <T>(name: string) => text(name, { mode: "json" }).$type<T>();

/** A release's health gate as stored (CONTRACT section 13): rates as fractions 0-1, the minimums, what it does. */
export interface HealthGate {
  maxCrashRate?: number | undefined;
  maxCrashRateRatio?: number | undefined;
  minSessions: number;
  minInstalls: number;
  action: "halt" | "rollback";
}

/**
 * A change of signing identity an Administrator accepted at upload (`allowSignerChange`): the artifact's platform and
 * file, the identities the rule expected (`from`) and the one found (`to`), who accepted it and when.
 */
export interface SignerChange {
  platform: string;
  fileName: string;
  from: string[];
  to: string | null;
  by: string;
  at: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Accounts and access

export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    userName: text("user_name").notNull(),
    /** Lower-cased user name: user names are unique regardless of case. */
    normalizedUserName: text("normalized_user_name").notNull(),
    email: text("email"),
    phoneNumber: text("phone_number"),
    title: text("title"),
    firstName: text("first_name"),
    lastName: text("last_name"),
    department: text("department"),
    image: text("image"),
    address: text("address"),
    postalCode: text("postal_code"),
    region: text("region"),
    city: text("city"),
    country: text("country"),
    countryCode: text("country_code"),
    mobile: text("mobile"),
    notes: text("notes"),
    birthDate: text("birth_date"),
    rank: integer("rank"),
    customerId: integer("customer_id"),
    roles: json<string[]>("roles").notNull().default(sql`'[]'`),
    /** `pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>`; write-only. */
    passwordHash: text("password_hash"),
    lastDismissMessages: text("last_dismiss_messages"),
    lastLogIn: text("last_log_in"),
    /**
     * Bearer tokens of this user issued before this time (epoch seconds) are refused: set by a password change and
     * a removed role (auth/bearer.ts checks it with the logout lookup).
     */
    tokensValidAfter: integer("tokens_valid_after"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("users_normalized_user_name").on(t.normalizedUserName), index("users_email").on(t.email)],
);

export const userSettings = sqliteTable(
  "user_settings",
  {
    id: id(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    category: text("category"),
    group: text("group_name"),
    name: text("name").notNull(),
    value: text("value"),
    type: text("type"),
    description: text("description"),
    readOnly: bool("read_only").notNull().default(false),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("user_settings_user").on(t.userId)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: id(),
    name: text("name"),
    /** SHA-256 (hex) of the key; the key itself is shown once, by the POST that creates it. */
    keyDigest: text("key_digest").notNull(),
    /** The first characters of the key, for lists (`api_AbCd…`). */
    keyPrefix: text("key_prefix").notNull(),
    clientSecretDigest: text("client_secret_digest"),
    ownerId: text("owner_id").references(() => users.id, { onDelete: "set null" }),
    description: text("description"),
    createdDate: text("created_date").notNull(),
    expireDate: text("expire_date"),
    revoked: bool("revoked").notNull().default(false),
    permissions: integer("permissions").notNull().default(15),
    /**
     * Console session keys only (auth/console-session.ts): when a request last used the key, written at most once a
     * minute; the session ends after Application:ConsoleIdleTimeout without one. Null for every other key.
     */
    lastUsedAt: text("last_used_at"),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("api_keys_key_digest").on(t.keyDigest), index("api_keys_owner").on(t.ownerId)],
);

/** Bearer tokens ended by logout, kept until they would have expired anyway. */
/**
 * Tombstones of the administrator bootstrap (auth/bootstrap.ts): one row per configured administrator name that was
 * ever bootstrapped, so a deleted or renamed account or key is never created again.
 */
export const adminBootstraps = sqliteTable("admin_bootstraps", {
  normalizedUserName: text("normalized_user_name").primaryKey(),
  /** The isolate's claim: only the isolate whose claim landed creates the account and key. */
  claim: text("claim").notNull(),
  createdAt: createdAt(),
});

export const revokedTokens = sqliteTable("revoked_tokens", {
  jti: text("jti").primaryKey(),
  expiresAt: text("expires_at").notNull(),
});

/** Service settings written through `PUT /v1/settings`; they override environment variables (CONTRACT 1). */
export const settings = sqliteTable(
  "settings",
  {
    id: id(),
    category: text("category"),
    group: text("group_name"),
    name: text("name").notNull(),
    value: text("value"),
    type: text("type"),
    readOnly: bool("read_only").notNull().default(false),
    description: text("description"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("settings_name").on(t.name)],
);

// ---------------------------------------------------------------------------------------------------------------
// Stored resources (signature keys, files, email templates, mapping files)

export const resources = sqliteTable(
  "resources",
  {
    id: id(),
    name: text("name").notNull(),
    type: text("type"),
    code: text("code"),
    description: text("description"),
    source: text("source"),
    /** Write-only: protects the resource, never returned. */
    password: text("password"),
    data: text("data"),
    dataFormat: text("data_format"),
    meta: text("meta"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("resources_type").on(t.type), index("resources_code").on(t.code)],
);

// ---------------------------------------------------------------------------------------------------------------
// Customers, products, orders

export const customers = sqliteTable(
  "customers",
  {
    id: id(),
    code: text("code").notNull(),
    title: text("title"),
    firstName: text("first_name"),
    lastName: text("last_name"),
    company: text("company"),
    email: text("email"),
    phone: text("phone"),
    mobile: text("mobile"),
    fax: text("fax"),
    website: text("website"),
    address: text("address"),
    postalCode: text("postal_code"),
    city: text("city"),
    region: text("region"),
    country: text("country"),
    countryCode: text("country_code"),
    vatCode: text("vat_code"),
    isReseller: bool("is_reseller").notNull().default(false),
    rating: integer("rating"),
    notes: text("notes"),
    meta: text("meta"),
    /** The customer's id in the system it was imported from (`keygen:<user id>`): a second import finds it by this. */
    sourceId: text("source_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("customers_code").on(t.code),
    index("customers_email").on(t.email),
    // Imports find a row's customer by its email in any case (imports/import-writes.ts).
    index("customers_email_lower").on(sql`lower(${t.email})`),
    uniqueIndex("customers_source_id").on(t.sourceId),
  ],
);

export const contacts = sqliteTable(
  "contacts",
  {
    id: id(),
    customerId: integer("customer_id")
      .notNull()
      .references(() => customers.id, { onDelete: "cascade" }),
    title: text("title"),
    firstName: text("first_name"),
    lastName: text("last_name").notNull(),
    email: text("email"),
    phone: text("phone"),
    mobile: text("mobile"),
    fax: text("fax"),
    details: text("details"),
    notify: bool("notify").notNull().default(false),
    meta: text("meta"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("contacts_customer").on(t.customerId)],
);

export const products = sqliteTable(
  "products",
  {
    id: id(),
    code: text("code").notNull(),
    name: text("name").notNull(),
    description: text("description"),
    url: text("url"),
    copyright: text("copyright"),
    isApplication: bool("is_application").notNull().default(false),
    purchaseUrl: text("purchase_url"),
    renewalUrl: text("renewal_url"),
    supportEmail: text("support_email"),
    maintenanceNoticeDays: integer("maintenance_notice_days").notNull().default(30),
    price: real("price"),
    currency: text("currency"),
    meta: text("meta"),
    /** Bumped by every change to the product's releases or downloads: part of the feed cache key (CONTRACT 5). */
    releaseGeneration: integer("release_generation").notNull().default(0),
    /** Release control (CONTRACT section 8): callers below this version get `required: true` in the update check. */
    minimumVersion: text("minimum_version"),
    /** Sparkle's SUPublicEDKey (base64 Ed25519): uploads' EdDSA signatures are checked against it (issue 27). */
    sparklePublicKey: text("sparkle_public_key"),
    /** Signing identities (CONTRACT section 15, updates/signer-check.ts): an upload signed by another is refused. */
    windowsPublisherNames: json<string[]>("windows_publisher_names"),
    macTeamIds: json<string[]>("mac_team_ids"),
    /** Tauri's updater public key (tauri.conf.json `pubkey`): an upload's minisign `.sig` must verify with it. */
    tauriPublicKey: text("tauri_public_key"),
    /** The product's id in the system its licenses were imported from (`keygen:<id>`): the compatible routes' scope. */
    sourceId: text("source_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("products_code").on(t.code), uniqueIndex("products_source_id").on(t.sourceId)],
);

export const productReleases = sqliteTable(
  "product_releases",
  {
    id: id(),
    productId: integer("product_id")
      .notNull()
      .references(() => products.id, { onDelete: "cascade" }),
    version: text("version").notNull(),
    name: text("name"),
    description: text("description"),
    releaseNotes: text("release_notes"),
    releaseDate: text("release_date"),
    /** `stable` or `insider`. */
    channel: text("channel").notNull().default("stable"),
    public: bool("public").notNull().default(false),
    requiresMaintenance: bool("requires_maintenance").notNull().default(true),
    stagingPercentage: integer("staging_percentage"),
    /** Release control (CONTRACT section 8, delivery/admission.ts): scheduled rollout steps `[{ percentage, at }]`. */
    rolloutSchedule: json<{ percentage: number; at: string }[]>("rollout_schedule"),
    halted: bool("halted").notNull().default(false),
    haltedAt: text("halted_at"),
    /** `manual` (POST .../halt), `reports` (haltOnReports) or `health` (healthGate); null while not halted. */
    haltReason: text("halt_reason"),
    /** Why, in words: the text given to POST .../halt, or what the automatic halt saw; null while not halted. */
    haltNote: text("halt_note"),
    /**
     * The build's own version as the platform compares it, when it is not `version`: Sparkle's `sparkle:version`
     * (CFBundleVersion, often a build number such as 300).
     */
    bundleVersion: text("bundle_version"),
    /** Sparkle's `sparkle:minimumSystemVersion` / `sparkle:maximumSystemVersion`: the macOS versions it runs on. */
    minimumSystemVersion: text("minimum_system_version"),
    maximumSystemVersion: text("maximum_system_version"),
    /** Sparkle's `sparkle:informationalUpdate`: the update is announced, not installed. */
    informationalUpdate: bool("informational_update").notNull().default(false),
    /** The release notes as HTML (Sparkle's description), when given so; releaseNotes keeps them as Markdown. */
    releaseNotesHtml: text("release_notes_html"),
    rollback: bool("rollback").notNull().default(false),
    critical: bool("critical").notNull().default(false),
    /** A filter-language expression over the license's fields (http/filter.ts): who the release is for. */
    audience: text("audience"),
    haltOnReports: json<{ count: number; minutes: number }>("halt_on_reports"),
    /** Release health's gate (CONTRACT section 13, updates/health-gate.ts): when the release halts itself. */
    healthGate: json<HealthGate>("health_gate"),
    /** Deliberate changes of signing identity accepted by an Administrator at upload (CONTRACT section 15). */
    signerChanges: json<SignerChange[]>("signer_changes"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("product_releases_version").on(t.productId, t.version),
    index("product_releases_channel").on(t.productId, t.channel),
  ],
);

export const releaseDownloads = sqliteTable(
  "release_downloads",
  {
    id: id(),
    releaseId: integer("release_id")
      .notNull()
      .references(() => productReleases.id, { onDelete: "cascade" }),
    platform: text("platform").notNull(),
    kind: text("kind").notNull(),
    fileName: text("file_name").notNull(),
    sourceKind: text("source_kind").notNull(),
    url: text("url"),
    /** R2 key for `local` artifacts. */
    storageKey: text("storage_key"),
    size: integer("size").notNull(),
    sha256: text("sha256").notNull(),
    sha512: text("sha512").notNull(),
    /** SHA-1, lowercase hex (Squirrel.Windows' RELEASES and Velopack's feed name packages by it); null on rows older than it. */
    sha1: text("sha1"),
    signature: text("signature"),
    /** What the upload's check found (CONTRACT section 15): the Authenticode signer's common name, the Apple Team ID. */
    signer: text("signer"),
    teamId: text("team_id"),
    /** Whether the vendor's Tauri or Sparkle signature was verified over the bytes; null when none was checked. */
    signatureVerified: bool("signature_verified"),
    /** Completed downloads of the artifact the Worker served (updates/download-counts.ts), added by the queue. */
    downloadCount: integer("download_count").notNull().default(0),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("release_downloads_platform_kind").on(t.releaseId, t.platform, t.kind)],
);

/** Bytes of `resource` artifacts, in chunks under D1's row-size limit (DESIGN: 1 MiB). */
export const artifactChunks = sqliteTable(
  "artifact_chunks",
  {
    downloadId: integer("download_id")
      .notNull()
      .references(() => releaseDownloads.id, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    data: blob("data", { mode: "buffer" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.downloadId, t.seq] })],
);

/**
 * The use of download tokens (delivery/download-tokens.ts): tokens are stateless (signed), so a row is written only
 * when a token first serves bytes, keyed by the token's digest, and kept until the token expires.
 */
export const downloadTokens = sqliteTable(
  "download_tokens",
  {
    tokenDigest: text("token_digest").primaryKey(),
    downloadId: integer("download_id")
      .notNull()
      .references(() => releaseDownloads.id, { onDelete: "cascade" }),
    licenseId: integer("license_id"),
    expiresAt: text("expires_at").notNull(),
    /** When the token's first complete download happened; null while only ranges were served. */
    usedAt: text("used_at"),
    /** Bytes the token has served so far (complete downloads and ranges): at most twice the artifact's size. */
    bytesServed: integer("bytes_served").notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [index("download_tokens_expires").on(t.expiresAt)],
);

export const orders = sqliteTable(
  "orders",
  {
    id: id(),
    orderNumber: text("order_number").notNull(),
    customerId: integer("customer_id")
      .notNull()
      .references(() => customers.id),
    resellerId: integer("reseller_id").references(() => customers.id),
    status: integer("status").notNull().default(0),
    paymentStatus: integer("payment_status").notNull().default(0),
    total: real("total"),
    currency: text("currency"),
    purchaseOrder: text("purchase_order"),
    invoiceNumber: text("invoice_number"),
    paymentType: text("payment_type"),
    paymentNumber: text("payment_number"),
    paymentDate: text("payment_date"),
    description: text("description"),
    meta: text("meta"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("orders_order_number").on(t.orderNumber), index("orders_customer").on(t.customerId)],
);

export const orderProducts = sqliteTable(
  "order_products",
  {
    id: id(),
    orderId: integer("order_id")
      .notNull()
      .references(() => orders.id, { onDelete: "cascade" }),
    productId: integer("product_id")
      .notNull()
      .references(() => products.id),
    quantity: integer("quantity").notNull().default(1),
    unitPrice: real("unit_price"),
    discount: real("discount"),
    taxes: real("taxes"),
    description: text("description"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("order_products_order_product").on(t.orderId, t.productId),
    index("order_products_product").on(t.productId),
  ],
);

// ---------------------------------------------------------------------------------------------------------------
// Licenses

export const licenseTemplates = sqliteTable(
  "license_templates",
  {
    id: id(),
    name: text("name").notNull(),
    code: text("code"),
    productId: integer("product_id")
      .notNull()
      .references(() => products.id),
    releaseId: integer("release_id").references(() => productReleases.id, { onDelete: "set null" }),
    licenseType: integer("license_type"),
    edition: text("edition"),
    licensingMode: integer("licensing_mode"),
    maxClients: integer("max_clients"),
    expireDays: integer("expire_days"),
    supportDays: integer("support_days"),
    features: json<string[]>("features"),
    /** Days a license of this template may go without checking in (CONTRACT 11); none or 0 = no check-in interval. */
    checkInDays: integer("check_in_days"),
    description: text("description"),
    meta: text("meta"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("license_templates_product").on(t.productId), index("license_templates_release").on(t.releaseId)],
);

export const licenses = sqliteTable(
  "licenses",
  {
    id: id(),
    /** Public identifier: `lic` + 8 upper-case hex characters. */
    licenseId: text("license_id").notNull(),
    userKey: text("user_key").notNull(),
    productId: integer("product_id")
      .notNull()
      .references(() => products.id),
    customerId: integer("customer_id").references(() => customers.id),
    orderId: integer("order_id").references(() => orders.id),
    templateId: integer("template_id").references(() => licenseTemplates.id, { onDelete: "set null" }),
    licenseType: integer("license_type").notNull().default(0),
    edition: text("edition"),
    licensingMode: integer("licensing_mode").notNull().default(0),
    maxClients: integer("max_clients").notNull().default(0),
    issueDate: text("issue_date").notNull(),
    expireDate: text("expire_date"),
    supportExpireDate: text("support_expire_date"),
    revoked: bool("revoked").notNull().default(false),
    features: json<string[]>("features"),
    licenseeName: text("licensee_name"),
    licenseeEmail: text("licensee_email"),
    licenseeCompany: text("licensee_company"),
    description: text("description"),
    trace: bool("trace").notNull().default(true),
    /** Days the license may go without checking in (from its template; 0 = none; CONTRACT 11). */
    checkInDays: integer("check_in_days").notNull().default(0),
    /** The last online licensing operation (validate, activate, seat, checkout), written off the request path. */
    lastCheckIn: text("last_check_in"),
    /** The lastCheckIn whose overdue period license.check-in-overdue was emitted for (once per period). */
    checkInOverdueFor: text("check_in_overdue_for"),
    meta: text("meta"),
    /** HMAC of the core fields keyed by Application:EncryptionKey; a mismatch reads as Tampered (CONTRACT 4). */
    integrity: text("integrity"),
    /**
     * SHA-256 of the key another system issued (CONTRACT 16, `legacyKey`: trimmed, as typed), accepted wherever the
     * user key is; the key itself is never stored.
     */
    legacyKeyDigest: text("legacy_key_digest"),
    /** The legacy key's last 4 characters (the `legacyKey` the API shows, masked like other secrets). */
    legacyKey: text("legacy_key_hint"),
    /** The license's id in the system it was imported from (`keygen:<id>`): a second import finds it by this. */
    sourceId: text("source_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("licenses_license_id").on(t.licenseId),
    uniqueIndex("licenses_legacy_key").on(t.legacyKeyDigest),
    uniqueIndex("licenses_source_id").on(t.sourceId),
    uniqueIndex("licenses_user_key").on(t.userKey),
    // User keys are looked up as typed, read as Crockford base32 (licensing/user-key.ts): by the key without its
    // dashes, whatever format it was generated with. Unique, so one typed key never names two licenses.
    uniqueIndex("licenses_user_key_compact").on(sql`replace(${t.userKey}, '-', '')`),
    index("licenses_product").on(t.productId),
    index("licenses_customer").on(t.customerId),
    index("licenses_order").on(t.orderId),
    index("licenses_template").on(t.templateId),
  ],
);

export const licenseTokens = sqliteTable(
  "license_tokens",
  {
    id: id(),
    /** SHA-256 of the token (`actk_…` / `fltk_…`); the token is returned to the client that obtained it. */
    tokenDigest: text("token_digest").notNull(),
    tokenPrefix: text("token_prefix").notNull(),
    kind: integer("kind").notNull(),
    licenseId: integer("license_id")
      .notNull()
      .references(() => licenses.id, { onDelete: "cascade" }),
    machineId: text("machine_id"),
    clientId: text("client_id"),
    clientName: text("client_name"),
    address: text("address"),
    issueDate: text("issue_date").notNull(),
    expireDate: text("expire_date"),
    lastHeartbeat: text("last_heartbeat"),
    /** An imported machine's id in the system it came from (`keygen:<machine id>`): the compatible routes name it. */
    sourceId: text("source_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("license_tokens_digest").on(t.tokenDigest),
    uniqueIndex("license_tokens_source_id").on(t.sourceId),
    index("license_tokens_license").on(t.licenseId, t.machineId, t.clientId),
  ],
);

/**
 * License files issued (CONTRACT 11; licensing/license-file.ts): one row per checkout or borrow, so the console shows
 * a license's files and borrowed seats. The file itself is not kept (it is the client's); a borrow's row names its
 * seat's token digest, so a return or the seat's end is seen in license_tokens.
 */
export const licenseFiles = sqliteTable(
  "license_files",
  {
    id: id(),
    licenseId: integer("license_id")
      .notNull()
      .references(() => licenses.id, { onDelete: "cascade" }),
    /** The file's random id (its payload's `fileId`). */
    fileId: text("file_id").notNull(),
    machineId: text("machine_id").notNull(),
    clientId: text("client_id"),
    encrypted: bool("encrypted").notNull().default(false),
    issuedAt: text("issued_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    /** A borrowed seat's end (the file's `borrow.until`); none for a plain checkout. */
    borrowUntil: text("borrow_until"),
    /** The borrowed seat's token digest (license_tokens.token_digest). */
    tokenDigest: text("token_digest"),
    /** When the borrowed seat was returned early. */
    returnedAt: text("returned_at"),
    createdAt: createdAt(),
  },
  (t) => [index("license_files_license").on(t.licenseId, t.issuedAt), index("license_files_token").on(t.tokenDigest)],
);

export const licenseTraces = sqliteTable(
  "license_traces",
  {
    id: id(),
    licenseId: integer("license_id").references(() => licenses.id, { onDelete: "cascade" }),
    action: integer("action").notNull(),
    clientIp: text("client_ip"),
    clientId: text("client_id"),
    clientName: text("client_name"),
    machineId: text("machine_id"),
    geoLocation: text("geo_location"),
    meta: text("meta"),
    createdAt: createdAt(),
  },
  (t) => [index("license_traces_license").on(t.licenseId), index("license_traces_created").on(t.createdAt)],
);

/**
 * Release adoption (CONTRACT section 8; updates/adoption.ts): one row per install, release, day, stage and platform
 * it was seen at, written by the queue consumer with INSERT OR IGNORE, so a count is of distinct installs and a
 * redelivered message adds nothing. `stage` 0 offered, 1 downloaded, 2 running; `platform` '' when not known (a
 * validation names none); `install` `i:<install id>` or `l:<license id>:<machine id>`.
 */
export const releaseAdoption = sqliteTable(
  "release_adoption",
  {
    releaseId: integer("release_id")
      .notNull()
      .references(() => productReleases.id, { onDelete: "cascade" }),
    /** The UTC day, `YYYY-MM-DD`. */
    day: text("day").notNull(),
    stage: integer("stage").notNull(),
    platform: text("platform").notNull(),
    install: text("install").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.releaseId, t.day, t.stage, t.platform, t.install] }),
    index("release_adoption_day").on(t.day),
  ],
);

/**
 * Release health (CONTRACT section 13, updates/sessions.ts): one row per session (install id + session id of a
 * product), written by the queue consumer, never on the request path. `status`: 0 started, 1 exited, 2 crashed,
 * 3 abnormal (the last final one sent). `day` is the UTC day the session started; `address` the sender's IPv4
 * address or IPv6 /64 (the honest-count limits); `licensed` whether a license credential sent it.
 */
export const releaseSessions = sqliteTable(
  "release_sessions",
  {
    productId: integer("product_id")
      .notNull()
      .references(() => products.id, { onDelete: "cascade" }),
    install: text("install").notNull(),
    sessionId: text("session_id").notNull(),
    releaseId: integer("release_id")
      .notNull()
      .references(() => productReleases.id, { onDelete: "cascade" }),
    day: text("day").notNull(),
    platform: text("platform").notNull(),
    status: integer("status").notNull(),
    startedAt: text("started_at").notNull(),
    durationMs: integer("duration_ms"),
    address: text("address").notNull(),
    licensed: bool("licensed").notNull(),
    /**
     * Whether the figures and the gate count it (the honest counts: its address's unlicensed installs that day were
     * within Updates:HealthInstallsPerAddress); a session beyond them is kept for its install's crash loops alone.
     */
    counted: bool("counted").notNull().default(true),
  },
  (t) => [
    primaryKey({ columns: [t.productId, t.install, t.sessionId] }),
    // The honest counts' per-address count reads only the address's counted unlicensed rows (sessions.ts).
    index("release_sessions_release_day").on(t.releaseId, t.day, t.address, t.licensed, t.counted, t.install),
    index("release_sessions_install_day").on(t.productId, t.install, t.day),
    index("release_sessions_day").on(t.day),
  ],
);

/**
 * Installs in a crash loop (CONTRACT section 13, updates/crash-loops.ts): their last sessions of `version` all
 * crashed soon after starting, so their update answers offer the previous admissible release, for them alone, until
 * they report a session of another version or one that did not crash.
 */
export const installCrashLoops = sqliteTable(
  "install_crash_loops",
  {
    productId: integer("product_id")
      .notNull()
      .references(() => products.id, { onDelete: "cascade" }),
    install: text("install").notNull(),
    releaseId: integer("release_id")
      .notNull()
      .references(() => productReleases.id, { onDelete: "cascade" }),
    version: text("version").notNull(),
    since: text("since").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.productId, t.install] }),
    index("install_crash_loops_since").on(t.productId, t.since),
  ],
);

export const assemblies = sqliteTable(
  "assemblies",
  {
    id: id(),
    name: text("name").notNull(),
    version: text("version"),
    culture: text("culture"),
    publicKeyToken: text("public_key_token"),
    mappingFileId: integer("mapping_file_id").references(() => resources.id, { onDelete: "set null" }),
    debugSymbolsKey: text("debug_symbols_key"),
    description: text("description"),
    releaseId: integer("release_id").references(() => productReleases.id, { onDelete: "cascade" }),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("assemblies_release").on(t.releaseId)],
);

export const reports = sqliteTable(
  "reports",
  {
    id: id(),
    uid: text("uid"),
    name: text("name").notNull(),
    version: text("version"),
    date: text("date"),
    licenseId: integer("license_id").references(() => licenses.id, { onDelete: "set null" }),
    machineId: text("machine_id"),
    clientId: text("client_id"),
    clientName: text("client_name"),
    contentType: text("content_type"),
    content: text("content"),
    /** R2 key when the content was too large to keep in the row. */
    contentKey: text("content_key"),
    address: text("address"),
    geoLocation: text("geo_location"),
    properties: json<{ name: string; value: string | null }[]>("properties"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("reports_license").on(t.licenseId), index("reports_created").on(t.createdAt)],
);

// ---------------------------------------------------------------------------------------------------------------
// Webhooks

export const webhookSubscriptions = sqliteTable("webhook_subscriptions", {
  id: id(),
  name: text("name").notNull(),
  url: text("url").notNull(),
  eventTypes: json<string[]>("event_types").notNull(),
  /** AES-GCM encrypted with Application:EncryptionKey; returned only by the POST that creates it. */
  secretEncrypted: text("secret_encrypted").notNull(),
  headers: json<Record<string, string>>("headers"),
  isActive: bool("is_active").notNull().default(true),
  maxRetryCount: integer("max_retry_count").notNull().default(8),
  description: text("description"),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

export const webhookEvents = sqliteTable(
  "webhook_events",
  {
    id: id(),
    webhookSubscriptionId: integer("webhook_subscription_id")
      .notNull()
      .references(() => webhookSubscriptions.id, { onDelete: "cascade" }),
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    payload: text("payload").notNull(),
    statusCode: integer("status_code"),
    response: text("response"),
    errorMessage: text("error_message"),
    isSuccess: bool("is_success").notNull().default(false),
    retryCount: integer("retry_count").notNull().default(0),
    sentAt: text("sent_at"),
    nextRetryAt: text("next_retry_at"),
    /** When the delivery was given up and its dead letter recorded (webhooks/dead-letter.ts); null otherwise. */
    deadLetteredAt: text("dead_lettered_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("webhook_events_event_subscription").on(t.eventId, t.webhookSubscriptionId),
    index("webhook_events_subscription").on(t.webhookSubscriptionId),
    index("webhook_events_created").on(t.createdAt),
  ],
);

// ---------------------------------------------------------------------------------------------------------------
// Service log and email outbox

export const logs = sqliteTable(
  "logs",
  {
    id: id(),
    timestamp: text("timestamp").notNull(),
    level: integer("level").notNull(),
    /** `Service` or `Audit` (db/logging.ts LOG_CATEGORIES): audit entries are for Administrators only. */
    category: text("category").notNull().default("Service"),
    message: text("message").notNull(),
    exception: text("exception"),
    properties: text("properties"),
    requestId: text("request_id"),
  },
  (t) => [
    index("logs_timestamp").on(t.timestamp),
    index("logs_level").on(t.level),
    index("logs_category").on(t.category),
  ],
);

export const emailOutbox = sqliteTable("email_outbox", {
  id: id(),
  to: text("to_address").notNull(),
  subject: text("subject").notNull(),
  body: text("body").notNull(),
  isHtml: bool("is_html").notNull().default(false),
  status: text("status").notNull().default("queued"),
  createdAt: createdAt(),
  sentAt: text("sent_at"),
});

/**
 * `Idempotency-Key` of management POSTs (http/idempotency.ts): one row per credential scope and key. While the first
 * request runs, only the claim exists (no status); then its answer is kept until `expires_at` (24 hours after the
 * claim), so a repeat with the same body answers it again. Housekeeping removes expired rows.
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    /** Whose key: `key:<API key id>` or `user:<user id>` (http/idempotency.ts scopeOf). */
    scope: text("scope").notNull(),
    key: text("key").notNull(),
    /** SHA-256 (hex) of the method, path, query and body of the request that claimed the key; null while it runs. */
    fingerprint: text("fingerprint"),
    /** The first answer: status, media type and body; status null while the first request runs. */
    status: integer("status"),
    contentType: text("content_type"),
    body: text("body"),
    createdAt: createdAt(),
    expiresAt: text("expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index("idempotency_keys_expires").on(t.expiresAt)],
);

// ---------------------------------------------------------------------------------------------------------------
// Commerce (CONTRACT section 10): payment providers' webhooks become customers, orders and licenses

/**
 * A provider's product, price or variant (`externalId`) -> the license template it sells (`/v1/commerce/mappings`).
 * `quantityMode` `licenses`: N licenses for quantity N; `seats`: one license with maxClients = N x the template's.
 */
export const commerceMappings = sqliteTable(
  "commerce_mappings",
  {
    id: id(),
    /** `stripe`, `paddle` or `lemonsqueezy`. */
    provider: text("provider").notNull(),
    /** The provider's price / product (Stripe, Paddle) or variant / product (Lemon Squeezy) id. */
    externalId: text("external_id").notNull(),
    templateId: integer("template_id")
      .notNull()
      .references(() => licenseTemplates.id),
    quantityMode: text("quantity_mode").notNull().default("licenses"),
    description: text("description"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("commerce_mappings_external").on(t.provider, t.externalId)],
);

/**
 * One purchase at a provider (a subscription, or a one-time order/invoice/transaction), with the state its events
 * left: what the next event needs to know, whichever order they arrive in (a refund before its payment is
 * remembered here, `refunded`, before any order exists). `orderId` is set once the purchase made its order.
 */
export const commercePurchases = sqliteTable(
  "commerce_purchases",
  {
    id: id(),
    provider: text("provider").notNull(),
    /** The provider's id of the purchase: the subscription id when there is one, else the order/invoice/transaction. */
    purchaseRef: text("purchase_ref").notNull(),
    /** The provider's customer id, when the provider names one. */
    customerRef: text("customer_ref"),
    orderId: integer("order_id").references(() => orders.id, { onDelete: "set null" }),
    /** `active`, `pastDue`, `canceling` (expires at periodEnd), `canceled`, `refunded`, `disputed`. */
    state: text("state").notNull().default("active"),
    /** End of the paid period, the latest any event named (ISO). */
    periodEnd: text("period_end"),
    /**
     * Every renewal's period (JSON `[{ end, lines }]`, lines null when the renewal named none), whatever order they
     * arrived in: each license expires at the end of the latest period that paid for it, so a downgrade renews only
     * what it paid for and a period delivered late still counts (fulfilment.ts applyPeriods).
     */
    paidPeriods: text("paid_periods"),
    /**
     * The commerce_events row of the purchase event making the order and its licenses: claimed in one UPDATE, so of
     * two purchase events of one purchase only one makes them (another takes over only after it failed).
     */
    makerEventId: integer("maker_event_id"),
    /**
     * When every license of the order was made and the license email sent (or not due): claimed in one UPDATE, so
     * the email goes once. Until then a retry of the purchase event completes what is missing, and other events
     * are remembered for the maker to apply.
     */
    completedAt: text("completed_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("commerce_purchases_ref").on(t.provider, t.purchaseRef),
    index("commerce_purchases_order").on(t.orderId),
  ],
);

/**
 * Every other id a provider uses for a purchase (invoice, payment intent, charge, transaction, order), so an event
 * that names only one of them finds it: (provider, ref) is unique.
 */
export const commerceRefs = sqliteTable(
  "commerce_refs",
  {
    provider: text("provider").notNull(),
    ref: text("ref").notNull(),
    purchaseId: integer("purchase_id")
      .notNull()
      .references(() => commercePurchases.id, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.provider, t.ref] })],
);

/**
 * The provider events received, one row per (provider, provider event id): the atomic claim that makes each event
 * count once (INSERT … ON CONFLICT DO NOTHING), and the event history of a purchase and its order.
 */
export const commerceEvents = sqliteTable(
  "commerce_events",
  {
    id: id(),
    provider: text("provider").notNull(),
    /** The provider's event id (Stripe `evt_…`, Paddle `evt_…`; Lemon Squeezy: event name, resource id and body digest). */
    eventId: text("event_id").notNull(),
    /** The provider's event type (`invoice.paid`, `transaction.completed`, `order_created` …). */
    type: text("type").notNull(),
    /** What it did: purchase, renewal, refund, dispute, cancel, cancelAtPeriodEnd, pastDue, ignored. */
    action: text("action").notNull(),
    /** `processing` while it runs, then `applied`, `remembered` (before its purchase), `ignored`, `unmapped`, `failed`. */
    status: text("status").notNull(),
    purchaseId: integer("purchase_id").references(() => commercePurchases.id, { onDelete: "set null" }),
    orderId: integer("order_id").references(() => orders.id, { onDelete: "set null" }),
    /** The provider's id of the purchase the event is about. */
    purchaseRef: text("purchase_ref"),
    /** What happened, in words (licenses made, dates set, the unmapped ids). */
    detail: text("detail"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("commerce_events_event").on(t.provider, t.eventId),
    index("commerce_events_order").on(t.orderId),
    index("commerce_events_purchase").on(t.purchaseId),
  ],
);

/**
 * The customer portal's credentials (portal/portal-session.ts): one-time sign-in links sent by email (`link`) and
 * signed-in sessions (`session`), each stored as the SHA-256 of its secret. A row opens one customer's licenses, or
 * only `licenseId` for a license with no customer signed in by its user key. Never an API key or a staff session:
 * nothing but the portal's routes reads this table.
 */
export const portalCredentials = sqliteTable(
  "portal_credentials",
  {
    id: id(),
    /** SHA-256 (hex) of the link token or session secret. */
    digest: text("digest").notNull(),
    kind: text("kind", { enum: ["link", "session"] }).notNull(),
    customerId: integer("customer_id").references(() => customers.id, { onDelete: "cascade" }),
    /** The license a user key signed in with (the session ends when that license is revoked or deleted). */
    licenseId: integer("license_id").references(() => licenses.id, { onDelete: "cascade" }),
    expiresAt: text("expires_at").notNull(),
    /** A link: when it signed in (a link signs in once). */
    usedAt: text("used_at"),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("portal_credentials_digest").on(t.digest),
    index("portal_credentials_customer").on(t.customerId),
    index("portal_credentials_license").on(t.licenseId),
  ],
);

/**
 * Imports from another system (CONTRACT 16; imports/import-service.ts): one row a run, its report as it grows. A large
 * import's rows wait in R2 (`imports/<importId>/<chunk>.json`) for the queue; `processed` counts the rows judged.
 */
export const imports = sqliteTable(
  "imports",
  {
    id: id(),
    /** Public identifier: `imp` + 12 lower-case hex characters. */
    importId: text("import_id").notNull(),
    source: text("source").notNull(),
    dryRun: bool("dry_run").notNull().default(false),
    /** `running` (queued chunks remain), `done`, or `failed` (a chunk could not be written; the report says which). */
    status: text("status").notNull(),
    /** Rows the source held (licenses), those with errors included. */
    total: integer("total").notNull(),
    processed: integer("processed").notNull().default(0),
    createdCustomers: integer("created_customers").notNull().default(0),
    createdLicenses: integer("created_licenses").notNull().default(0),
    createdActivations: integer("created_activations").notNull().default(0),
    /** Rows already imported before (found by source id or legacy key): left as they were. */
    skipped: integer("skipped").notNull().default(0),
    errorCount: integer("error_count").notNull().default(0),
    /** The first IMPORT_ERRORS_KEPT errors, `[{ row, field, message }]`. */
    errors: json<{ row: number; field: string; message: string }[]>("errors").notNull(),
    unsupported: json<string[]>("unsupported").notNull(),
    /** The numbers of the queued chunks written, so a chunk delivered twice counts once. */
    doneChunks: json<number[]>("done_chunks").notNull().default([]),
    createdBy: text("created_by"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("imports_import_id").on(t.importId)],
);
