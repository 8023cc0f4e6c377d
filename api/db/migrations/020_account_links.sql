-- A way back in (docs/guides/password-reset.md, docs/guides/account-page.md).
--
-- One-time links mailed to a person: a password reset, an address to verify, a new address a
-- person asked for (their address changes when its link is followed). Only the SHA-256 of a
-- link's token is kept (a copy of the database opens no account), with the address it was sent
-- to: a reset or verify link is void once the person's address is another.
CREATE TABLE account_links (
  token_hash bytea PRIMARY KEY,
  purpose    text NOT NULL CHECK (purpose IN ('reset', 'verify', 'change')),
  user_id    bigint NOT NULL REFERENCES users ON DELETE CASCADE,
  email      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX account_links_user ON account_links (user_id);
CREATE INDEX account_links_expires ON account_links (expires_at);

-- Mail to send, written in the transaction of what it tells and sent by the outbox
-- (api/mail/outbox.ts) after the page has answered: a mail server that is down or slow holds
-- no request, and nothing acknowledged is lost. A row holds no secret: a link's token is made
-- when the mail is sent. `next_attempt_at` is also the lease of the process sending it.
CREATE TABLE mail_outbox (
  id              bigserial PRIMARY KEY,
  kind            text NOT NULL,
  address         text NOT NULL,
  user_id         bigint REFERENCES users ON DELETE CASCADE,
  language        text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  attempts        integer NOT NULL DEFAULT 0,
  last_error      text
);
CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at);

-- A person who signed up where registration asks for a verified address first: no sign-in
-- until the link in their mail is followed.
ALTER TABLE users ADD COLUMN must_verify_email boolean NOT NULL DEFAULT false;

-- Where a browser signed in from, for the person's account page and the admin's view; and whether
-- its amr was all proven by the sign-in that made it (not added since by enrolling a factor in it:
-- only a proven second factor stands for the current password, api/people/own-account.ts).
ALTER TABLE browser_sessions ADD COLUMN address text, ADD COLUMN user_agent text,
  ADD COLUMN proven boolean NOT NULL DEFAULT false;
