import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The console is served by the Worker at /console/ from console/dist (wrangler.toml [assets]): the files go to
// dist/console/ so that the asset path matches the URL path.
export default defineConfig({
  root: fileURLToPath(new URL(".", import.meta.url)),
  base: "/console/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  resolve: { alias: { react: "preact/compat", "react-dom": "preact/compat" } },
  build: {
    outDir: "dist/console",
    emptyOutDir: true,
    target: "es2022",
    // One small bundle: the first load is measured against the budget by scripts/check-budget.mjs.
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
