-- User keys are looked up as typed, read as Crockford base32 (src/licensing/user-key.ts): by the key without its dashes.
CREATE UNIQUE INDEX `licenses_user_key_compact` ON `licenses` (replace(`user_key`, '-', ''));
