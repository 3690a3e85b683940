import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
// @ts-expect-error: a plain JavaScript module
import { testWranglerConfig } from "./scripts/lib/test-wrangler-config.mjs";

// Tests run inside workerd against the real local bindings of wrangler.toml (D1, R2, Durable Objects, Queues).
// The migrations drizzle-kit generated are applied by test/setup.ts, so each test file starts from the schema.
export default defineConfig(async () => {
  const migrations = await readD1Migrations("./migrations");
  // wrangler.toml's copy in a directory of its own: a developer's .dev.vars (npm run dev writes one) never reaches the
  // tests (scripts/lib/test-wrangler-config.mjs); its queues deliver batches within a second.
  const configPath: string = testWranglerConfig({ fastQueues: true });
  return {
    plugins: [
      // A function of `inject`: the fake geolocation service of test/global-setup.ts starts before the Worker.
      cloudflareTest(({ inject }) => ({
        main: "./src/index.ts",
        wrangler: { configPath },
        miniflare: {
          // A real send_email binding under another name: email tests pass it as EMAIL to check the raw messages.
          email: { send_email: [{ name: "TEST_EMAIL" }] },
          bindings: {
            TEST_MIGRATIONS: migrations,
            // Tests run as Development: their secrets are short and published, and webhooks go to http://127.0.0.1.
            // test/production-checks.test.ts runs the Worker as Production with its own variables.
            Application__Environment: "Development",
            Application__JwtSecret: "test-jwt-secret-at-least-32-bytes-long!!",
            Application__EncryptionKey: "test-encryption-key",
            Application__AdminUsername: "admin",
            Application__AdminPassword: "Admin-12345678",
            Application__AdminApiKey: "api_TestAdminKey00000000000000000000",
            Webhooks__AllowInsecureUrls: "true",
            // Each answer reports its D1 work (http/d1-session.ts), as in development.
            Application__ServerTiming: "true",
            Application__GeoLocationService: `${inject("geoServiceUrl")}/geo/{ip}`,
            // The payment providers' webhook secrets of test/commerce-webhooks.test.ts (src/commerce/).
            Commerce__Stripe__WebhookSecret: "whsec_test_commerce_stripe",
            Commerce__Paddle__WebhookSecret: "pdl_ntfset_test_commerce_paddle",
            Commerce__LemonSqueezy__WebhookSecret: "test-commerce-lemonsqueezy",
          },
        },
      })),
    ],
    test: {
      globalSetup: ["./test/global-setup.ts"],
      setupFiles: ["./test/setup.ts"],
      include: ["test/**/*.test.ts"],
      // test/node/ runs in Node with its own config (vitest.node.config.ts), not inside workerd.
      exclude: ["test/node/**", "**/node_modules/**"],
      // Uploads of several MiB and 100-request concurrency tests share 2 cores with the other test files.
      testTimeout: 30_000,
    },
  };
});
