import { expect, it } from "vitest";
import { admin, call, login } from "./helpers";
it("serves the first resource", async () => {
  const created = await admin("POST", "/v1/resources", { resource: { name: "first", type: "File" } });
  console.log(created.status, created.text);
  const list = await admin("GET", "/v1/resources?filter=name%20%3D%3D%20%22first%22");
  console.log(list.status, list.text);
  const token = await login();
  const s = await call("GET", "/v1/auth/session", { token });
  console.log(s.status, s.text);
  const doc = await call("GET", "/swagger/v1/swagger.json");
  console.log(doc.status, doc.text.slice(0, 300));
  expect(list.status).toBe(200);
});
