-- Sign-in codes by email (docs/guides/second-factors.md): a factor of kind 'email'. Its code is
-- kept on the factor's row, not in a table of its own: a person holds one code at a time (a new
-- one replaces the last, by one UPDATE), a code goes with its factor (a removal, a reset, the
-- person deleted) with nothing else to clean, and one UPDATE of that row both checks and uses it.
-- Only the code's HMAC under the box's factor key is stored (api/credentials/email-codes.ts): a
-- copy of the database cannot try the million codes against it.
--
-- Expand, then offer (docs/operations/upgrades.md "A new kind"): the CHECK widened under its name.
ALTER TABLE factors DROP CONSTRAINT factors_kind_check,
  ADD CONSTRAINT factors_kind_check CHECK (kind IN ('passkey', 'totp', 'email'));
-- email: the code's HMAC, until when it may be used, and the sign-in (or signed-in browser) it was
-- asked for: the SHA-256 of that step's or session's id, so that a code works only where it was asked.
ALTER TABLE factors ADD COLUMN email_code_hash bytea,
  ADD COLUMN email_code_expires_at timestamptz,
  ADD COLUMN email_code_for bytea;
