import { defineConfig } from "vitest/config";

// Tests that run in Node rather than workerd: they start the bundled Worker under Miniflare (scripts/local-worker.mjs)
// and drive it with Node tools (Spectral).
export default defineConfig({
  test: {
    include: ["test/node/**/*.test.ts"],
    environment: "node",
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});
