/**
 * Release notes as the service keeps them: `releaseNotes` in Markdown (or plain text), `releaseNotesHtml` in HTML,
 * and each updater's feed takes its own form (Sparkle's description and Velopack's NotesHtml the HTML; Tauri,
 * Squirrel.Mac, electron-builder and Velopack's NotesMarkdown the Markdown). A tool that writes HTML notes (a Sparkle
 * appcast's `description`) gives both: the HTML as written, and Markdown made from it here with turndown, so that
 * no text-showing updater shows markup.
 */
import TurndownService from "turndown";

/** Markdown of HTML release notes: ATX headings, `-` lists, fenced code; scripts, styles and the head dropped. */
export function markdownOf(html: string): string {
  const turndown = new TurndownService({
    headingStyle: "atx",
    bulletListMarker: "-",
    codeBlockStyle: "fenced",
    emDelimiter: "_",
  });
  turndown.remove(["script", "style", "title", "head"]);
  return turndown.turndown(html).trim();
}
