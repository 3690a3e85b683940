import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The customer portal's page (CONTRACT section 12), served by the Worker at /portal/ from console/dist (wrangler.toml
// [assets]): its own small entry beside the console's, written to dist/portal/ so that the asset path matches the URL
// path. Preact like the console, everything bundled here (no other origin); its first load has its own budget
// (console/scripts/budget.mjs).
export default defineConfig({
  root: fileURLToPath(new URL("./portal", import.meta.url)),
  base: "/portal/",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: fileURLToPath(new URL("./dist/portal", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
