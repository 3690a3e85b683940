/**
 * Per-isolate state, in one place (docs/architecture.md, "Per-isolate memos"). Every cache a module keeps between
 * requests is declared here by name: a bounded map (`memo`), a map keyed by an object that goes with it (`weakMemo`),
 * or a single value with its own forget (`forgettable`). The registry lists them all (`memos()`), and one call forgets
 * them (`forgetAll()`), or those that depend on one kind of write (`forgetAll("releases")`).
 *
 * A memo is a Map: a read on a hot path is a Map get, nothing more. What differs between memos is declared, not
 * re-coded: its bound (`max` entries; when full, the oldest entry leaves, or all of them for `evict: "all"`), its
 * lifetime (`ttlMs`, checked by the owner with `fresh`, which counts a clock that went backwards as expired), and the
 * writes that make it stale (`forgetOn`).
 */

/** Kinds of write that make memos stale; `forgetAll(kind)` forgets the memos that name it. */
export type MemoTopic = "releases" | "keys" | "settings" | "signing-keys";

export interface MemoOptions {
  /** What the entries are keyed by (documentation; the registry lists it). */
  key: string;
  /** At most this many entries (Infinity when another bound applies: then say which in `bound`). */
  max: number;
  /** "oldest" (default): the oldest entry leaves for a new one; "all": the memo is emptied when full. */
  evict?: "oldest" | "all";
  /** An entry is used for at most this long (the owner checks with `fresh`); undefined: as long as it is kept. */
  ttlMs?: number;
  /** The lifetime in words when `ttlMs` is not the whole story. */
  lifetime?: string;
  /** The bound in words when `max` is not the whole story (bytes, per key…). */
  bound?: string;
  /** The writes after which this isolate forgets the memo (besides `forgetAll()`). */
  forgetOn?: readonly MemoTopic[];
  /** Runs after the memo is emptied (state kept beside the map, e.g. a byte count). */
  cleared?: () => void;
}

/** A memo as the registry lists it. */
export interface MemoInfo {
  name: string;
  kind: "map" | "weak" | "value";
  key: string;
  bound: string;
  lifetime: string;
  forgetOn: readonly MemoTopic[];
}

interface Registered {
  info: MemoInfo;
  forget?: () => void;
}

const registry = new Map<string, Registered>();

function register(info: MemoInfo, forget?: () => void): void {
  if (registry.has(info.name)) throw new Error(`memo ${info.name} is declared twice`);
  registry.set(info.name, { info, forget });
}

/** A bounded map of one memo: `keep` stores under the bound; reads are the Map's own. */
export class Memo<K, V> extends Map<K, V> {
  readonly #max: number;
  readonly #evictAll: boolean;
  readonly #cleared: (() => void) | undefined;

  constructor(
    readonly memoName: string,
    readonly options: MemoOptions,
  ) {
    super();
    this.#max = options.max;
    this.#evictAll = options.evict === "all";
    this.#cleared = options.cleared;
  }

  /** Stores `value` as the newest entry, making room first (the oldest entry leaves, or all of them). */
  keep(key: K, value: V): V {
    this.delete(key);
    if (this.size >= this.#max) {
      if (this.#evictAll) this.clear();
      else this.delete(this.keys().next().value as K);
    }
    this.set(key, value);
    return value;
  }

  /** The oldest entry's key (the next to leave), or undefined when empty. */
  oldest(): K | undefined {
    return this.keys().next().value;
  }

  override clear(): void {
    super.clear();
    this.#cleared?.();
  }
}

/** Declares a named, bounded memo; see the file comment. */
export function memo<K, V>(name: string, options: MemoOptions): Memo<K, V> {
  const map = new Memo<K, V>(name, options);
  register(
    {
      name,
      kind: "map",
      key: options.key,
      bound:
        options.bound ??
        `${options.max} entries${options.evict === "all" ? ", emptied when full" : ", oldest leaves first"}`,
      lifetime: options.lifetime ?? (options.ttlMs === undefined ? "while kept" : `${options.ttlMs} ms`),
      forgetOn: options.forgetOn ?? [],
    },
    () => map.clear(),
  );
  return map;
}

/**
 * Declares a memo keyed by an object (a settings object, a D1 binding, a list): a WeakMap, whose entries go with
 * their key, so it needs no bound and cannot be emptied (a new object is a new key).
 */
export function weakMemo<K extends WeakKey, V>(name: string, key: string): WeakMap<K, V> {
  register({ name, kind: "weak", key, bound: "one entry per live key object", lifetime: "its key's", forgetOn: [] });
  return new WeakMap<K, V>();
}

/** Declares state kept beside the maps (a single cached value) with the function that forgets it. */
export function forgettable(
  name: string,
  options: { key: string; bound?: string; lifetime: string; forgetOn?: readonly MemoTopic[] },
  forget: () => void,
): void {
  register(
    {
      name,
      kind: "value",
      key: options.key,
      bound: options.bound ?? "one value",
      lifetime: options.lifetime,
      forgetOn: options.forgetOn ?? [],
    },
    forget,
  );
}

/**
 * Whether an entry kept at `keptAt` may still be used at `now` for `ttlMs`: a clock that went backwards (tests move
 * it) counts as expired rather than young for longer.
 */
export function fresh(keptAt: number, now: number, ttlMs: number): boolean {
  return now >= keptAt && now - keptAt < ttlMs;
}

/**
 * Forgets every memo of this isolate (tests), or with `topic` those that a write of that kind makes stale (a
 * product or release change: "releases"; an API key or user change: "keys"; a settings write: "settings").
 */
export function forgetAll(topic?: MemoTopic): void {
  for (const { info, forget } of registry.values()) {
    if (forget && (topic === undefined || info.forgetOn.includes(topic))) forget();
  }
}

/** Every memo declared so far (modules declare theirs when first imported), in declaration order. */
export function memos(): MemoInfo[] {
  return [...registry.values()].map(({ info }) => info);
}
