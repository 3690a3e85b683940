/**
 * The layers of DESIGN.md "Layers and layout", kept by `npm run lint:deps` (part of `npm test`). A layer is a folder
 * of src/, and imports point one way, from a folder to the folders listed before it:
 *
 *   gen -> kernel -> db -> durable -> http -> auth, protection -> records -> webhooks, mail -> licensing -> updates
 *       -> delivery -> commerce, portal, imports -> overview -> routes -> app -> index.ts
 *
 * Folders of the same step (auth and protection; webhooks and mail; commerce, portal and
 * imports) do not import each other. Inside routes/, an audience's folder (routes/management/, routes/updates/, …)
 * imports the shared route builders (routes/*.ts) and its own files, never another audience's; only app/ assembles
 * routes. Type-only imports count (tsPreCompilationDeps), so no circle hides in types.
 */
const ORDER = [
  ["gen"],
  ["kernel"],
  ["db"],
  ["durable"],
  ["http"],
  ["auth", "protection"],
  ["records"],
  ["webhooks", "mail"],
  ["licensing"],
  ["updates"],
  ["delivery"],
  ["commerce", "portal", "imports"],
  ["overview"],
  ["routes"],
  ["app"],
];

/** The folders a file of `folder` may import: its own and every folder of an earlier step. */
function allowed(folder) {
  const step = ORDER.findIndex((folders) => folders.includes(folder));
  return [folder, ...ORDER.slice(0, step).flat()];
}

const folderRules = ORDER.flat().map((folder) => ({
  name: `layer-${folder}`,
  comment: `src/${folder}/ imports only ${
    allowed(folder)
      .filter((f) => f !== folder)
      .join(", ") || "no other folder"
  } (and itself).`,
  severity: "error",
  from: { path: `^src/${folder}/` },
  to: { path: "^src/", pathNot: [`^src/(${allowed(folder).join("|")})/`, "^src/[^/]+\\.d\\.ts$"] },
}));

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import circle, type-only imports included (DESIGN.md, Layers and layout).",
      severity: "error",
      from: { path: "^src/" },
      to: { circular: true },
    },
    ...folderRules,
    {
      name: "routes-by-audience",
      comment:
        "A route module imports the shared route builders (routes/*.ts) and its own audience's files, never another audience's.",
      severity: "error",
      from: { path: "^src/routes/([^/]+)/" },
      to: { path: "^src/routes/[^/]+/", pathNot: "^src/routes/$1/" },
    },
    {
      name: "only-the-app-assembles-routes",
      comment: "Route modules are registered by app/ alone: nothing but app/ and routes/ imports routes/.",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(app|routes)/" },
      to: { path: "^src/routes/" },
    },
    {
      name: "no-loose-files",
      comment:
        "Every module of src/ lives in its layer's folder; only the Worker entry and declarations stand at the top.",
      severity: "error",
      from: { path: "^src/[^/]+$", pathNot: "^src/(index\\.ts|[^/]+\\.d\\.ts)$" },
      to: {},
    },
    {
      name: "not-to-unresolvable",
      comment: "An import that resolves to nothing is a typo or a missing dependency.",
      severity: "error",
      from: { path: "^src/" },
      to: { couldNotResolve: true, pathNot: "^cloudflare:" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    tsPreCompilationDeps: true,
    // typescript 7 (the native compiler) has no JS API yet; dependency-cruiser reads TypeScript through swc instead.
    parser: "swc",
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".d.ts", ".js", ".mjs"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
