-- OpenID Connect. Whether a user's email is vouched for: addresses an administrator
-- entered are (the box's admins answer for them), addresses people signed up with
-- themselves are not, until an administrator sets them again. Rows from before this
-- migration cannot tell which they were, so none is vouched for (docs/guides/upgrading.md);
-- new rows always say (api/store/users.ts).
ALTER TABLE users ADD COLUMN email_verified boolean NOT NULL DEFAULT false;

-- A signed-in browser's session id (the ID token's `sid`, what RP-initiated logout
-- ends) and when its person signed in (`auth_time`).
ALTER TABLE browser_sessions ADD COLUMN sid uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX browser_sessions_sid ON browser_sessions (sid);

-- What an authorization code carries into the ID token of its exchange.
ALTER TABLE authorization_codes ADD COLUMN nonce text, ADD COLUMN auth_time timestamptz, ADD COLUMN sid uuid;

-- Token sessions started through a signed-in browser record its sid in details:
-- logging that browser out closes them.
CREATE INDEX sessions_browser_sid ON sessions ((details->>'sid')) WHERE details ? 'sid';
