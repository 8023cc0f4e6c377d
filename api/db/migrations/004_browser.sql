-- Browser flows: signed-in browsers, consents, authorization codes, sign-in
-- throttling, and box-wide settings (the CSRF key).

CREATE TABLE box_settings (
  name  text PRIMARY KEY,
  value text NOT NULL
);

-- A signed-in browser. The cookie holds a random token; only its SHA-256 is kept.
CREATE TABLE browser_sessions (
  id_hash    bytea PRIMARY KEY,
  user_id    bigint NOT NULL REFERENCES users ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX browser_sessions_user ON browser_sessions (user_id);
CREATE INDEX browser_sessions_expires ON browser_sessions (expires_at);

-- What a user allowed a client; a later request within these scopes skips the consent page.
CREATE TABLE consents (
  user_id    bigint NOT NULL REFERENCES users ON DELETE CASCADE,
  client_id  text NOT NULL,
  scopes     text[] NOT NULL,
  granted_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, client_id)
);

-- Authorization codes: single use, short-lived, bound to client, redirect URI and PKCE challenge.
CREATE TABLE authorization_codes (
  code_hash      bytea PRIMARY KEY,
  client_id      text NOT NULL,
  user_id        bigint NOT NULL REFERENCES users ON DELETE CASCADE,
  redirect_uri   text NOT NULL,
  scope          text,
  code_challenge text,
  expires_at     timestamptz NOT NULL,
  used_at        timestamptz,
  session_id     uuid                  -- the session the code was exchanged for (closed if the code is replayed)
);
CREATE INDEX authorization_codes_expires ON authorization_codes (expires_at);

-- Failed sign-ins per account and per address, in fixed windows.
CREATE TABLE sign_in_failures (
  key          text PRIMARY KEY,       -- 'email:<lower-case email>' or 'addr:<ip>'
  failures     integer NOT NULL,
  window_start timestamptz NOT NULL
);
