#!/usr/bin/env node
// `npm run openapi [-- FILE]`: writes the service's OpenAPI document (every route with its parameters, bodies,
// answers and descriptions: the interface reference) to FILE (default openapi.json), taken from the bundled Worker
// under workerd, so no running service is needed. Swagger UI shows the same document at /swagger.
import { writeFileSync } from "node:fs";
import { startLocalWorker } from "./local-worker.mjs";

const file = process.argv[2] ?? "openapi.json";
const worker = await startLocalWorker({
  bindings: {
    Application__JwtSecret: "openapi-export-secret-0123456789abcdef",
    Application__EncryptionKey: "openapi-export",
  },
});
try {
  const res = await fetch(new URL("/swagger/v1/swagger.json", worker.url));
  if (!res.ok) throw new Error(`GET /swagger/v1/swagger.json: ${res.status}`);
  const document = await res.json();
  writeFileSync(file, `${JSON.stringify(document, null, 2)}\n`);
  console.log(`${file}: OpenAPI ${document.openapi}, ${Object.keys(document.paths).length} paths`);
} finally {
  await worker.dispose();
}
