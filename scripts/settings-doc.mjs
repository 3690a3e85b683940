#!/usr/bin/env node
// `npm run docs:settings`: writes docs/settings.md, the settings reference, from the settings' own definitions
// (src/kernel/settings.ts: parser, default, development default, description, secret), so the page cannot drift from
// the code. test/node/settings-doc.test.ts fails when the page differs from what this script writes.
//
// Runs on the project's Node 24 (npm scripts put it first on PATH), which strips the TypeScript of settings.ts itself;
// settings.ts imports only zod.
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DURATION_PARSERS, settingDefinitions } from "../src/kernel/settings.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
/** Where the page goes, from the repository's root. */
export const SETTINGS_PAGE = "docs/settings.md";

const MiB = 1024 * 1024;
const code = (text) => `\`${text}\``;
const pad = (n) => String(n).padStart(2, "0");

/** Milliseconds as the settings write durations: `hh:mm:ss`, with `d.` in front from a day on. */
export function formatDuration(ms) {
  const seconds = Math.floor(ms / 1000);
  const days = Math.floor(seconds / 86_400);
  const time = `${pad(Math.floor(seconds / 3600) % 24)}:${pad(Math.floor(seconds / 60) % 60)}:${pad(seconds % 60)}`;
  const fraction = ms % 1000 === 0 ? "" : `.${String(ms % 1000).padStart(3, "0")}`;
  return `${days > 0 ? `${days}.` : ""}${time}${fraction}`;
}

/** One value of a setting as the table shows it. */
function formatValue(definition, value) {
  if (value === undefined || value === null) return "—";
  if (DURATION_PARSERS.has(definition.parse) && typeof value === "number") return code(formatDuration(value));
  if (Array.isArray(value)) return value.length === 0 ? "(none)" : value.map(code).join(", ");
  if (typeof value === "object") return code(JSON.stringify(value));
  if (typeof value === "number" && value >= MiB && value % MiB === 0) return `${code(value)} (${value / MiB} MiB)`;
  return code(String(value));
}

/** The Default cell: the value (a secret's never), and the development default where it differs. */
function formatDefault(definition) {
  if (definition.secret) return definition.default === undefined ? "— (secret)" : "(secret)";
  const value = formatValue(definition, definition.default);
  if (!("developmentDefault" in definition)) return value;
  return `${value}; ${formatValue(definition, definition.developmentDefault)} in Development`;
}

/** A description for a Markdown table cell: setting names and routes as code, pipes escaped, one line. */
function formatDescription(text) {
  const names = Object.keys(settingDefinitions)
    .sort((a, b) => b.length - a.length)
    .map((name) => name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const route =
    "(?:(?:GET|PUT|POST|DELETE) )?/(?:v1|portal|console|activate|swagger|licensing\\.v1|health)\\b(?:[^\\s,;)`]*[^\\s,;).:`])?";
  const plain = new RegExp(`(?<![\\w:\`])(?:${names.join("|")})(?![\\w:])|(?<![\\w\`/])${route}`, "g");
  return text
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(plain, (match) => code(match))))
    .join("")
    .replace(/\s*\n\s*/g, " ")
    .replace(/\|/g, "\\|");
}

/** The settings' sections (the part of each name before its first `:`), in the order the definitions give them. */
function sections() {
  const bySection = new Map();
  for (const [name, definition] of Object.entries(settingDefinitions)) {
    const section = name.slice(0, name.indexOf(":"));
    if (!bySection.has(section)) bySection.set(section, []);
    bySection.get(section).push([name, definition]);
  }
  return bySection;
}

/** The text of docs/settings.md. */
export function settingsDoc() {
  const out = [
    "# Settings",
    "",
    "<!-- Generated from src/kernel/settings.ts by `npm run docs:settings` (scripts/settings-doc.mjs): edit the",
    "     descriptions there, not here. test/node/settings-doc.test.ts fails when this page is out of date. -->",
    "",
    "Every setting the service reads, with its default and what it does. How settings are set (environment variables,",
    "`wrangler secret put`, the settings table and `PUT /v1/settings`, the console's Settings page) is in",
    "[configuration.md](configuration.md). In an environment variable each `:` of a name is written `__`",
    "(`Application__EnableSwagger`). Durations are `hh:mm:ss` or `d.hh:mm:ss`; lists are a JSON array or a",
    "comma-separated string. A secret's value is never shown, by `GET /v1/settings` nor here.",
    "",
    `Sections: ${[...sections().keys()].map((s) => `[${s}](#${s.toLowerCase()})`).join(", ")}.`,
  ];
  for (const [section, settings] of sections()) {
    out.push("", `## ${section}`, "", "| Setting | Default | Meaning |", "|---|---|---|");
    for (const [name, definition] of settings)
      out.push(`| ${code(name)} | ${formatDefault(definition)} | ${formatDescription(definition.description)} |`);
  }
  return `${out.join("\n")}\n`;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(join(root, SETTINGS_PAGE), settingsDoc());
  console.log(`settings-doc: wrote ${SETTINGS_PAGE} (${Object.keys(settingDefinitions).length} settings)`);
}
