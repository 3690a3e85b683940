import { defineConfig } from "drizzle-kit";

/** drizzle-kit writes flat `0000_name.sql` files that wrangler and `readD1Migrations` both read. */
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
