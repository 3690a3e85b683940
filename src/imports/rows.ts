/**
 * Imports (CONTRACT section 16): what a source (Keygen's API documents, a CSV text) becomes before anything is
 * written. A source's reader turns its data into ImportRows, one a license, and reports what it cannot read as
 * ImportProblems (row and field) or lists what has no equivalent here; the rows are then checked against the
 * database and each written whole or not at all. Free of HTTP and of D1.
 * Readers never throw for bad data: a problem of the whole (malformed JSON:API, no header row) is an ImportProblem of
 * row 0.
 */

/** Where an import's data comes from. */
export const IMPORT_SOURCES = ["keygen", "csv"] as const;
export type ImportSource = (typeof IMPORT_SOURCES)[number];

/** A legacy key's rules are the licensing lookup's own (licensing/user-key.ts). */
export { LEGACY_KEY_MAX, LEGACY_KEY_MIN, legacyKeyProblem } from "../licensing/user-key";

/** A machine a license was activated on in the source. */
export interface ImportMachine {
  /** What the application identified the machine by (Keygen's fingerprint; the CSV's machine id). */
  fingerprint: string;
  /** The source's own id of the machine (Keygen's machine id): the compatible routes answer with it. */
  sourceId?: string;
  /** The machine's name in the source, when it has one. */
  name?: string;
}

/** The customer a license belongs to in the source. */
export interface ImportCustomer {
  /** The source's own id (Keygen's user id): a second import finds the same customer by it. */
  sourceId?: string;
  email?: string;
  firstName?: string;
  lastName?: string;
}

/** One license of a source, as the service will hold it. */
export interface ImportRow {
  /** Its position in the source (1-based): the CSV's line number, or the license's place in Keygen's pages. */
  row: number;
  /** The source's own id of the license (Keygen's license id): a second import finds the same license by it. */
  sourceId?: string;
  /** The key as the source issued it, trimmed (legacyKeyProblem is empty for it). */
  legacyKey: string;
  /** The service's product code the license is for. */
  product: string;
  /** The source's own id of that product (Keygen's product id): the compatible routes' product scope names it. */
  productSourceId?: string;
  customer?: ImportCustomer;
  edition?: string;
  /** ISO 8601 instant; none: perpetual. */
  expireDate?: string;
  /** 0: activation, no machine limit beyond maxClients; 2: floating (the service's licensing modes). */
  licensingMode?: "activation" | "floating";
  /** Activations (activation mode: distinct machines) or concurrent seats (floating); 0 = unlimited. */
  maxClients?: number;
  /** Revoked in the service (Keygen's suspended or banned licenses), with the reason as the license's description. */
  revoked?: boolean;
  description?: string;
  machines: ImportMachine[];
}

/** What a source's reader could not take: the row (0: the data as a whole), the field, and why. */
export interface ImportProblem {
  row: number;
  field: string;
  message: string;
}

/** What a source's reader makes of the data. */
export interface ReadSource {
  rows: ImportRow[];
  /** Rows with a problem: never imported. */
  errors: ImportProblem[];
  /**
   * What the source holds that has no equivalent here, in words, once each (e.g. "policy 'Trial' (…id): maxUses");
   * the import's report lists them (its `unsupported`).
   */
  unsupported: string[];
}
