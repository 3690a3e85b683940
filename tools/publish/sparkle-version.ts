/**
 * Sparkle's order of versions: SUStandardVersionComparator (Sparkle/SUStandardVersionComparator.m), which Sparkle
 * applies to an item's `sparkle:version` and the app's CFBundleVersion (is the item newer?), to the items of an appcast
 * (the highest wins, the first of equals) and to `sparkle:minimumSystemVersion` against the running macOS. Ported
 * rule for rule, so that a publisher can tell before publishing whether Sparkle will ever offer a build:
 *
 * - a version splits into parts where the kind of character changes (digits, other characters, or one separator:
 *   `.`, punctuation, white space); everything from the first `-` after the first character on is ignored
 *   (`1.5.5-335d3e2` equals `1.5.5-a655360`);
 * - leading runs of numbers and periods are balanced with `0` parts, so `1.0` equals `1.0.0`;
 * - parts compare pairwise: numbers by value, other text literally, separators alike; a number beats a period, and
 *   anything beats text (`1.0` is above `1.0b1`);
 * - when one runs out, a longer tail that starts with text is lower (`1.0b` below `1.0`), with a number higher.
 */

type CharacterKind = "number" | "text" | "period" | "punctuation" | "whitespace" | "dash";

function kindOf(character: string): CharacterKind {
  if (character === ".") return "period";
  if (character === "-") return "dash";
  if (/^\p{Nd}/u.test(character)) return "number";
  if (/^\s/u.test(character)) return "whitespace";
  if (/^\p{P}/u.test(character)) return "punctuation";
  return "text";
}

const isSeparator = (kind: CharacterKind) => kind === "period" || kind === "punctuation" || kind === "whitespace";

function sameClass(a: CharacterKind, b: CharacterKind): boolean {
  return isSeparator(a) ? isSeparator(b) : a === b;
}

/** The parts of a version, split where the kind of character changes; each separator is a part of its own. */
function split(version: string): string[] {
  if (version.length === 0) return [];
  const parts: string[] = [];
  let part = version[0]!;
  let previous = kindOf(part);
  for (let i = 1; i < version.length; i++) {
    const character = version[i]!;
    const kind = kindOf(character);
    if (kind === "dash") break;
    if (kind !== previous || isSeparator(previous)) {
      parts.push(part);
      part = character;
    } else part += character;
    previous = kind;
  }
  parts.push(part);
  return parts;
}

/** How many parts at the start are numbers or periods. */
function numericPrefix(parts: readonly string[]): number {
  let count = 0;
  for (const part of parts) {
    const kind = kindOf(part);
    if (kind !== "number" && kind !== "period") break;
    count++;
  }
  return count;
}

/** Pads the shorter numeric start with `0` and `.` parts, as the longer has them (`1.1` against `1.0.0`: `1.1.0`). */
function balance(a: string[], b: string[]): void {
  const [countA, countB] = [numericPrefix(a), numericPrefix(b)];
  const [to, from, start, end] = countA < countB ? [a, b, countA, countB] : [b, a, countB, countA];
  for (let i = start; i < end; i++) to.splice(i, 0, kindOf(from[i]!) === "period" ? "." : "0");
}

/** A number part's value; Sparkle's longLongValue reads ASCII digits only. */
const numberOf = (part: string) => (/^[0-9]+$/.test(part) ? BigInt(part) : 0n);

/** Sparkle's comparison of two versions: negative when `a` is older than `b`, 0 when equal, positive when newer. */
export function compareSparkleVersions(a: string, b: string): number {
  const partsA = split(a);
  const partsB = split(b);
  balance(partsA, partsB);
  const n = Math.min(partsA.length, partsB.length);
  for (let i = 0; i < n; i++) {
    const [partA, partB] = [partsA[i]!, partsB[i]!];
    const [kindA, kindB] = [kindOf(partA), kindOf(partB)];
    if (sameClass(kindA, kindB)) {
      if (kindA === "number") {
        const [x, y] = [numberOf(partA), numberOf(partB)];
        if (x !== y) return x > y ? 1 : -1;
      } else if (kindA === "text" && partA !== partB) return partA > partB ? 1 : -1;
    } else if (kindA !== "text" && kindB === "text") return 1;
    else if (kindA === "text" && kindB !== "text") return -1;
    // A number against a separator: the separator is out of place.
    else return kindA === "number" ? 1 : -1;
  }
  if (partsA.length === partsB.length) return 0;
  const longerIsA = partsA.length > partsB.length;
  const tail = (longerIsA ? partsA : partsB)[n]!;
  // A tail of text (`1.0b`) is below the bare version; a tail of numbers (`1.0.1`) above it.
  const longerWins = kindOf(tail) !== "text";
  return longerIsA === longerWins ? 1 : -1;
}
