/**
 * The filter language's tokens (filter.ts): operators, identifiers, numbers and C#-style strings with their escapes,
 * each with its position for the syntax error that names it.
 */
import { type ApiError, RefusalError } from "../kernel/errors";

export type Token =
  | { kind: "identifier" | "operator" | "end"; text: string; pos: number }
  | { kind: "string"; text: string; value: string; pos: number }
  | { kind: "number"; text: string; value: number; integer: boolean; pos: number };

/** Longest first, so `<=` is not read as `<` then `=`. */
export const OPERATORS = ["==", "!=", "<>", "<=", ">=", "&&", "||", "=", "<", ">", "!", "(", ")", ".", ",", "-"];
export const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  "\\": "\\",
  "'": "'",
  n: "\n",
  t: "\t",
  r: "\r",
  "0": "\0",
};
export const IDENTIFIER = /[A-Za-z_][A-Za-z0-9_]*/y;
export const NUMBER = /\d+(\.\d+)?([eE][+-]?\d+)?/y;

export function syntaxError(pos: number, message: string): ApiError {
  return new RefusalError(500, `Syntax error at position ${pos}: ${message}`);
}

export function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  while (pos < input.length) {
    if (/\s/.test(input.charAt(pos))) {
      pos++;
      continue;
    }
    const token = readToken(input, pos);
    tokens.push(token);
    pos += token.text.length;
  }
  tokens.push({ kind: "end", text: "", pos });
  return tokens;
}

export function readToken(input: string, pos: number): Token {
  const c = input.charAt(pos);
  if (c === '"') return readString(input, pos);
  const identifier = matchAt(IDENTIFIER, input, pos);
  if (identifier) return { kind: "identifier", text: identifier, pos };
  const number = matchAt(NUMBER, input, pos);
  if (number) return readNumber(number, pos);
  const operator = OPERATORS.find((op) => input.startsWith(op, pos));
  if (operator) return { kind: "operator", text: operator, pos };
  throw syntaxError(pos, `Invalid character '${c}'`);
}

export function matchAt(pattern: RegExp, input: string, pos: number): string | undefined {
  pattern.lastIndex = pos;
  return pattern.exec(input)?.[0];
}

export function readNumber(text: string, pos: number): Token {
  const value = Number(text);
  const integer = /^\d+$/.test(text);
  if (integer ? !Number.isSafeInteger(value) : !Number.isFinite(value)) {
    throw syntaxError(pos, `Invalid ${integer ? "integer" : "real"} literal '${text}'`);
  }
  return { kind: "number", text, value, integer, pos };
}

export function readString(input: string, start: number): Token {
  let value = "";
  let pos = start + 1;
  while (pos < input.length) {
    const c = input.charAt(pos);
    if (c === '"') return { kind: "string", text: input.slice(start, pos + 1), value, pos: start };
    if (c !== "\\") {
      value += c;
      pos++;
      continue;
    }
    const [decoded, length] = readEscape(input, pos);
    value += decoded;
    pos += length;
  }
  throw syntaxError(start, "Unterminated string literal");
}

/** The escape at `pos` (a backslash): its character and how many input characters it spans. */
export function readEscape(input: string, pos: number): [string, number] {
  const c = input.charAt(pos + 1);
  const simple = ESCAPES[c];
  if (simple !== undefined) return [simple, 2];
  const hex = input.slice(pos + 2, pos + 6);
  if (c === "u" && /^[0-9A-Fa-f]{4}$/.test(hex)) return [String.fromCharCode(parseInt(hex, 16)), 6];
  if (pos + 1 >= input.length) throw syntaxError(pos, "Unterminated string literal");
  throw syntaxError(pos, `Invalid escape sequence '\\${c}'`);
}
