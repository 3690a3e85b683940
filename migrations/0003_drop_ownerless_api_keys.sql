-- API keys whose owner was deleted before deleting a user deleted the user's keys (src/management/users.ts): the
-- foreign key left them without an owner, and such a key still opened the licensing routes, which need no role.
-- The API makes no ownerless key (an owner is required on create and update), so these are all deleted users' keys.
DELETE FROM api_keys WHERE owner_id IS NULL;
