/** Text made safe inside HTML (an element's text or a quoted attribute): the five characters markup reads, escaped. */
const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** `text` with `& < > " '` as character references: what the license email's placeholders and release notes use. */
export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => HTML_ESCAPES[ch] ?? ch);
