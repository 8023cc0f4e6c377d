-- Passkeys and second factors (docs/guides/passkeys.md, docs/guides/second-factors.md).
--
-- A person's factors: passkeys (WebAuthn credentials, several, named) and at most one
-- confirmed TOTP. A TOTP secret must be read to check a code, so it is sealed (AES-256-GCM
-- under the box's factor key, api/credentials/sealing.ts), never hashed; what a person can
-- use once (recovery codes) is hashed.
CREATE TABLE factors (
  id             bigserial PRIMARY KEY,
  user_id        bigint NOT NULL REFERENCES users ON DELETE CASCADE,
  kind           text NOT NULL CHECK (kind IN ('passkey', 'totp')),
  name           text NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  last_used_at   timestamptz,
  -- A TOTP being enrolled is unconfirmed until its first code; only confirmed factors sign in.
  confirmed      boolean NOT NULL DEFAULT true,
  -- passkey: the credential (its id is unique box-wide: it names one person's key, never another's)
  credential_id  bytea UNIQUE,
  public_key     bytea,
  sign_count     bigint,
  transports     text[],
  device_type    text CHECK (device_type IN ('singleDevice', 'multiDevice')),
  backed_up      boolean,
  -- totp: the sealed secret, and the last time step a code was accepted for (RFC 6238 §5.2: a code is accepted once)
  totp_secret    bytea,
  totp_last_step bigint,
  CHECK (kind <> 'passkey' OR (credential_id IS NOT NULL AND public_key IS NOT NULL AND sign_count IS NOT NULL)),
  CHECK (kind <> 'totp' OR totp_secret IS NOT NULL)
);
CREATE INDEX factors_user ON factors (user_id);
CREATE UNIQUE INDEX factors_user_name ON factors (user_id, lower(name)) WHERE confirmed;
CREATE UNIQUE INDEX factors_one_totp ON factors (user_id) WHERE kind = 'totp' AND confirmed;

-- Ten one-time recovery codes per person, SHA-256 of 80 random bits each; used_at once used.
CREATE TABLE recovery_codes (
  user_id    bigint NOT NULL REFERENCES users ON DELETE CASCADE,
  code_hash  bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  used_at    timestamptz,
  PRIMARY KEY (user_id, code_hash)
);

-- A group may require its members to sign in with a second factor; an administrator's reset
-- of a person's factors makes them enrol one at their next sign-in.
ALTER TABLE groups ADD COLUMN require_second_factor boolean NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN must_enrol boolean NOT NULL DEFAULT false;

-- What each sign-in proved (RFC 8176 amr values): a browser session, the codes issued through
-- it and the device codes it approved carry it into tokens (their session's details).
ALTER TABLE browser_sessions ADD COLUMN amr text[] NOT NULL DEFAULT '{pwd}';
ALTER TABLE authorization_codes ADD COLUMN amr text[];
ALTER TABLE device_codes ADD COLUMN amr text[];

-- A sign-in half made: the first factor is proven, the second (or an enrolment) is not yet.
-- The browser holds a random token, the row its SHA-256; a step is used once (deleted when it
-- completes) and ends with the person's credentials (api/credentials/closing.ts).
CREATE TABLE sign_in_steps (
  id_hash     bytea PRIMARY KEY,
  user_id     bigint NOT NULL REFERENCES users ON DELETE CASCADE,
  amr         text[] NOT NULL,
  -- set for a step-up: the browser session it replaces once the missing factor is proven
  replaces    uuid,
  -- the step's factor is proven and only a page is left to show (the recovery codes of an
  -- enrolment): the one kind of step that goes on without another proof
  ready       boolean NOT NULL DEFAULT false,
  expires_at  timestamptz NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sign_in_steps_user ON sign_in_steps (user_id);
CREATE INDEX sign_in_steps_replaces ON sign_in_steps (replaces) WHERE replaces IS NOT NULL;
CREATE INDEX sign_in_steps_expires ON sign_in_steps (expires_at);

-- WebAuthn challenges handed to a browser: each is answered once, by the browser it was
-- given to, for what it was given for, before it expires (deleted when used).
CREATE TABLE webauthn_challenges (
  challenge   text PRIMARY KEY,
  browser     bytea NOT NULL,                  -- SHA-256 of the browser's id (its CSRF cookie)
  purpose     text NOT NULL CHECK (purpose IN ('register', 'authenticate')),
  user_id     bigint REFERENCES users ON DELETE CASCADE,
  expires_at  timestamptz NOT NULL
);
CREATE INDEX webauthn_challenges_expires ON webauthn_challenges (expires_at);
