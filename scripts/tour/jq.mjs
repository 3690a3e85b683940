#!/usr/bin/env node
// A stand-in for `jq` where Debian's package cannot be installed (scripts/tour.mjs puts it on PATH only then): the
// filters the docs use, `jq [-r] .a.b[0].c` (a path of names and indexes) and `.`, on JSON read from stdin.
const args = process.argv.slice(2);
const raw = args.includes("-r");
const filter = args.find((a) => !a.startsWith("-")) ?? ".";
if (!/^\.(?:[A-Za-z_][\w]*|\[\d+\])?(?:\.[A-Za-z_][\w]*|\[\d+\])*$/.test(filter)) {
  console.error(`jq stand-in: unsupported filter ${filter} (only paths such as .a.b[0].c)`);
  process.exit(3);
}
let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  let value;
  try {
    value = JSON.parse(input);
  } catch {
    console.error("jq stand-in: stdin is not JSON");
    process.exit(2);
  }
  for (const part of filter.match(/[A-Za-z_]\w*|\[\d+\]/g) ?? []) {
    if (value === null || value === undefined) break;
    value = part.startsWith("[") ? value[Number(part.slice(1, -1))] : value[part];
  }
  value ??= null;
  console.log(raw && typeof value === "string" ? value : JSON.stringify(value, null, raw ? 0 : 2));
});
