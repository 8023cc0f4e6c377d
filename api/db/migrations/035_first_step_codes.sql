-- Sign-in codes by email as the first step of a sign-in, for people without a password
-- (BOXAUTH_SMTP_SIGN_IN_CODES=first-step, docs/guides/second-factors.md "A code instead of a
-- password"). Such a person has no `factors` row of kind 'email' to keep the code on, so it is kept
-- here, one per person (a new one replaces the last), with what 034 keeps on that row: the code's
-- HMAC under the factor key (api/credentials/email-codes.ts), until when it may be used, and the
-- SHA-256 of the browser's token it was asked for. One DELETE takes it, once. It goes with the person.
CREATE TABLE first_step_codes (
  user_id bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
  code_hash bytea NOT NULL,
  code_for bytea NOT NULL,
  expires_at timestamptz NOT NULL
);
