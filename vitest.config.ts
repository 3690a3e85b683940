import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// Tests run inside workerd against the real local bindings of wrangler.toml (D1, R2, Durable Objects, Queues).
// The migrations drizzle-kit generated are applied by test/setup.ts, so each test file starts from the schema.
export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations");
  return {
    plugins: [
      cloudflareTest({
        main: "./src/index.ts",
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            Application__JwtSecret: "test-jwt-secret-at-least-32-bytes-long!!",
            Application__EncryptionKey: "test-encryption-key",
            Application__AdminUsername: "admin",
            Application__AdminPassword: "Admin-12345",
            Application__AdminApiKey: "api_TestAdminKey00000000000000000000",
            Webhooks__AllowInsecureUrls: "true",
          },
        },
      }),
    ],
    test: {
      setupFiles: ["./test/setup.ts"],
      include: ["test/**/*.test.ts"],
    },
  };
});
