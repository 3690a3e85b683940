/** Sample requests that succeed, for the access-table walk: authentication, users, API keys, resources. */
import { ADMIN } from "../helpers";
import { type Samples, created } from "./kit";

const newResource = () => created("/v1/resources", { resource: { name: "fixture" } }, "resourceId");
export const newUser = () =>
  created("/v1/users", { user: { userName: `f${crypto.randomUUID().slice(0, 12)}`, roles: ["Sales"] } }, "userId");
const newSetting = async () => {
  const userId = await newUser();
  return {
    userId,
    settingId: await created(
      `/v1/users/${userId}/settings`,
      { userSetting: { name: "theme", value: "dark" } },
      "userSettingId",
    ),
  };
};
const newKey = async () =>
  created("/v1/api-keys", { apiKey: { ownerId: await newUser(), permissions: 1 } }, "apiKeyId");

export const accountSamples: Samples = {
  "POST /v1/auth/login": async () => ({ body: { username: ADMIN.username, password: ADMIN.password } }),
  "GET /v1/auth/user": async () => ({}),
  "POST /v1/auth/user": async () => ({ body: { user: { department: "Quality" } } }),
  "GET /v1/auth/session": async () => ({}),
  "POST /v1/auth/logout": async () => ({ body: {} }),
  "GET /v1/resources": async () => ({}),
  "POST /v1/resources": async () => ({ body: { resource: { name: "sample" } } }),
  "PUT /v1/resources": async () => ({ body: { resource: { id: await newResource(), description: "changed" } } }),
  "DELETE /v1/resources/{resourceId}": async () => ({ path: `/v1/resources/${await newResource()}` }),
  "GET /v1/users": async () => ({}),
  "POST /v1/users": async () => ({ body: { user: { userName: `s${crypto.randomUUID().slice(0, 12)}` } } }),
  "PUT /v1/users": async () => ({ body: { user: { id: await newUser(), notes: "changed" } } }),
  "DELETE /v1/users/{userId}": async () => ({ path: `/v1/users/${await newUser()}` }),
  "GET /v1/users/{userId}/settings": async () => ({ path: `/v1/users/${await newUser()}/settings` }),
  "POST /v1/users/{userId}/settings": async () => ({
    path: `/v1/users/${await newUser()}/settings`,
    body: { userSetting: { name: "lang" } },
  }),
  "PUT /v1/users/{userId}/settings": async () => {
    const s = await newSetting();
    return { path: `/v1/users/${s.userId}/settings`, body: { userSetting: { id: s.settingId, value: "light" } } };
  },
  "DELETE /v1/users/{userId}/settings/{settingId}": async () => {
    const s = await newSetting();
    return { path: `/v1/users/${s.userId}/settings/${s.settingId}` };
  },
  "GET /v1/roles": async () => ({}),
  "GET /v1/users/{userId}/roles": async () => ({ path: `/v1/users/${await newUser()}/roles` }),
  "POST /v1/users/{userId}/roles": async () => ({
    path: `/v1/users/${await newUser()}/roles`,
    body: { roles: ["LicenseManager"] },
  }),
  "DELETE /v1/users/{userId}/roles": async () => ({
    path: `/v1/users/${await newUser()}/roles`,
    body: { roles: ["Sales"] },
  }),
  "GET /v1/api-keys": async () => ({}),
  "POST /v1/api-keys": async () => ({ body: { apiKey: { ownerId: await newUser(), permissions: 1 } } }),
  "PUT /v1/api-keys": async () => ({ body: { apiKey: { id: await newKey(), description: "changed" } } }),
  "DELETE /v1/api-keys/{apiKeyId}": async () => ({ path: `/v1/api-keys/${await newKey()}` }),
};
