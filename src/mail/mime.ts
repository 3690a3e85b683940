/**
 * A raw RFC 5322 / MIME message for the `send_email` binding (`new EmailMessage(from, to, raw)`): CRLF line ends,
 * the subject as RFC 2047 encoded words when it is not short plain ASCII, UTF-8 bodies in base64 (so no line is
 * too long and no byte is misread), and HTML sent as multipart/alternative with a plain-text part for clients that
 * show no HTML. Pure: the date and message id are arguments.
 */
import { toBase64 } from "../kernel/crypto";

const CRLF = "\r\n";
/** Longest encoded word (RFC 2047: 75 characters) minus `=?UTF-8?B?` and `?=`. */
const ENCODED_WORD_PAYLOAD = 75 - 12;
/** Base64 body lines are at most 76 characters (RFC 2045). */
const BASE64_LINE = 76;

/** The message: bare addresses, one-line subject, text or HTML body. */
export interface MimeMail {
  from: string;
  to: string;
  subject: string;
  body: string;
  isHtml: boolean;
}

/** What makes one message unique: its date, Message-ID and multipart boundary. */
export interface MimeStamp {
  date: Date;
  /** Without angle brackets: `<id>@<domain>`. */
  messageId: string;
  /** Multipart boundary; any token that cannot occur in base64 text. */
  boundary?: string;
}

const encoder = new TextEncoder();

/** UTF-8 text as base64 lines of at most 76 characters. */
export function base64Lines(text: string): string {
  const encoded = toBase64(encoder.encode(text));
  const lines: string[] = [];
  for (let i = 0; i < encoded.length; i += BASE64_LINE) lines.push(encoded.slice(i, i + BASE64_LINE));
  return lines.join(CRLF);
}

/** One header line's text: no CR or LF can reach the header block (no header injection). */
function singleLine(text: string): string {
  return text.replace(/[\r\n]+/g, " ").trim();
}

/**
 * The Subject header value: as is when it is short printable ASCII, otherwise RFC 2047 `B` encoded words of whole
 * characters, folded one per line.
 */
export function encodeSubject(subject: string): string {
  const text = singleLine(subject);
  if (/^[\x20-\x7e]*$/.test(text) && text.length <= 60 && !text.includes("=?")) return text;
  const words: string[] = [];
  let chunk = "";
  for (const char of text) {
    const candidate = chunk + char;
    // 4 base64 characters per 3 bytes: keep each word's payload within the limit.
    if (Math.ceil(encoder.encode(candidate).length / 3) * 4 > ENCODED_WORD_PAYLOAD && chunk !== "") {
      words.push(chunk);
      chunk = char;
    } else chunk = candidate;
  }
  if (chunk !== "" || words.length === 0) words.push(chunk);
  return words.map((word) => `=?UTF-8?B?${toBase64(encoder.encode(word))}?=`).join(`${CRLF} `);
}

/** RFC 5322 date-time in UTC: `Mon, 02 Mar 2026 10:04:05 +0000`. */
export function mailDate(date: Date): string {
  return date.toUTCString().replace(/GMT$/, "+0000");
}

/** A readable plain-text version of an HTML body, for the text/plain alternative. */
export function htmlToText(html: string): string {
  return html
    .replace(/<(script|style|head)\b[\s\S]*?<\/\1\s*>/gi, "")
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(/<\/(p|div|h[1-6]|li|tr|table)\s*>/gi, "\n")
    .replace(/<a\b[^>]*\bhref\s*=\s*["']([^"']+)["'][^>]*>([\s\S]*?)<\/a\s*>/gi, "$2 ($1)")
    .replace(/<[^>]+>/g, "")
    .replace(/&nbsp;/g, " ")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&amp;/g, "&")
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

function part(type: "plain" | "html", text: string): string {
  return [`Content-Type: text/${type}; charset=utf-8`, "Content-Transfer-Encoding: base64", "", base64Lines(text)].join(
    CRLF,
  );
}

/** The whole raw message, headers and body, CRLF-terminated lines. */
export function buildMime(mail: MimeMail, stamp: MimeStamp): string {
  const headers = [
    `From: ${singleLine(mail.from)}`,
    `To: ${singleLine(mail.to)}`,
    `Subject: ${encodeSubject(mail.subject)}`,
    `Date: ${mailDate(stamp.date)}`,
    `Message-ID: <${singleLine(stamp.messageId)}>`,
    "MIME-Version: 1.0",
  ];
  if (!mail.isHtml) return [...headers, part("plain", mail.body)].join(CRLF) + CRLF;
  const boundary = stamp.boundary ?? `=_alt_${crypto.randomUUID()}`;
  return (
    [
      ...headers,
      `Content-Type: multipart/alternative; boundary="${boundary}"`,
      "",
      `--${boundary}`,
      part("plain", htmlToText(mail.body)),
      `--${boundary}`,
      part("html", mail.body),
      `--${boundary}--`,
    ].join(CRLF) + CRLF
  );
}
