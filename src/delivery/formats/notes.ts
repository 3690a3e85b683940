/**
 * Release notes as each format shows them (issue 37). A release keeps `releaseNotes` in Markdown (or plain text) and
 * `releaseNotesHtml` in HTML, each when it was given so; the publish CLI sends both for a tool that writes HTML (a
 * Sparkle appcast's description, made into Markdown there with turndown). Each feed takes its own form:
 *
 * - HTML (Sparkle's `description`, Velopack's `NotesHtml`): `releaseNotesHtml`, else the Markdown rendered here with
 *   marked (GitHub-flavoured; Sparkle shows HTML from every version on, where its own Markdown needs Sparkle 2.9 and
 *   macOS 12). Raw HTML in the Markdown is shown as the text it is (`a <b> c` stays as written): markup is
 *   `releaseNotesHtml`'s, and plain-text notes with angle brackets read as their author wrote them;
 * - text (Tauri's and Squirrel.Mac's `notes`, electron-builder's `releaseNotes`, Velopack's `NotesMarkdown`):
 *   `releaseNotes`, else the text of `releaseNotesHtml` (only HTML written through the API alone has no Markdown):
 *   its markup dropped, paragraphs and list items kept as lines. That text goes into JSON or YAML, never into HTML.
 */
import { Marked } from "marked";
import { escapeHtml } from "../../kernel/markup";
import type { ReleaseRow } from "../catalog";

type Notes = Pick<ReleaseRow, "releaseNotes" | "releaseNotesHtml">;

const markdown = new Marked({ gfm: true, async: false, renderer: { html: ({ text }) => escapeHtml(text) } });

/** The notes as HTML: the HTML given, else the Markdown rendered; "" when there are none. */
export function notesHtml(release: Notes): string {
  if (release.releaseNotesHtml) return release.releaseNotesHtml;
  return release.releaseNotes ? (markdown.parse(release.releaseNotes) as string).trim() : "";
}

/** The notes as Markdown or text: the Markdown given, else the text of the HTML; "" when there are none. */
export function notesText(release: Notes): string {
  if (release.releaseNotes) return release.releaseNotes;
  return release.releaseNotesHtml ? textOfHtml(release.releaseNotesHtml) : "";
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };

/** Character references: numeric ones and the few names notes use; any other name is left as written. */
function decodeEntities(text: string): string {
  return text.replace(/&(#[xX][0-9a-fA-F]{1,6}|#\d{1,7}|[a-zA-Z]+);/g, (whole, name: string) => {
    if (!name.startsWith("#")) return ENTITIES[name.toLowerCase()] ?? whole;
    const code = /^#[xX]/.test(name) ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/** The text of HTML notes: no markup, a line per list item (`- `) and line break, a blank line between blocks. */
export function textOfHtml(html: string): string {
  const text = html
    .replace(/<!--[\s\S]*?-->/g, "")
    .replace(/<(script|style|head|title)\b[\s\S]*?<\/\1\s*>/gi, "")
    .replace(/<li\b[^>]*>/gi, "\n- ")
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(
      /<\/?(?:p|div|ul|ol|h[1-6]|pre|blockquote|table|tr|section|article|header|footer|dl|dt|dd)\b[^>]*>/gi,
      "\n\n",
    )
    .replace(/<[^>]*>/g, "");
  return decodeEntities(text)
    .replace(/[ \t]+\n/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}
