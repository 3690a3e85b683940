import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The air-gapped activation page (CONTRACT section 11), served by the Worker at /activate/ from console/dist
// (wrangler.toml [assets]): its own small entry beside the console's, written to dist/activate/ so that the asset
// path matches the URL path. Everything it loads is bundled here: no other origin.
export default defineConfig({
  root: fileURLToPath(new URL("./activate", import.meta.url)),
  base: "/activate/",
  build: {
    outDir: fileURLToPath(new URL("./dist/activate", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
});
