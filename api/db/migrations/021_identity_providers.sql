-- Upstream identity providers (crds/identityprovider.yaml), shaped as Clients are: the resource
-- as jsonb, owned by a Kubernetes resource or by the REST API. Its client secret or bind password
-- is sealed under the box's factor key (api/credentials/sealing.ts), never hashed: it is sent on.
CREATE TABLE identity_providers (
  id            text PRIMARY KEY,
  resource      jsonb NOT NULL,
  secret_sealed bytea,
  managed_by    text,
  version       bigint NOT NULL DEFAULT 1,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER identity_providers_notify AFTER INSERT OR UPDATE OR DELETE ON identity_providers
  FOR EACH ROW EXECUTE FUNCTION boxauth_notify();

-- Which person an identity at a provider is. The key is the pair: one upstream identity never
-- reaches two people, and a subject at one provider says nothing of a subject at another. A
-- person has at most one identity per provider. A provider removed takes its links with it.
CREATE TABLE upstream_identities (
  provider     text NOT NULL REFERENCES identity_providers ON DELETE CASCADE,
  subject      text NOT NULL,
  user_id      bigint NOT NULL REFERENCES users ON DELETE CASCADE,
  email        text,
  linked_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (provider, subject),
  UNIQUE (provider, user_id)
);
CREATE INDEX upstream_identities_user ON upstream_identities (user_id);

-- A person who unlinked a provider: it no longer reaches them by their email (a trusted email
-- would link it straight back), until they link it again from their account page.
CREATE TABLE upstream_unlinks (
  provider    text NOT NULL REFERENCES identity_providers ON DELETE CASCADE,
  user_id     bigint NOT NULL REFERENCES users ON DELETE CASCADE,
  unlinked_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (provider, user_id)
);

-- A sign-in (or a link, from the account page) sent to a provider, until it comes back. Keyed
-- by the SHA-256 of its `state`; bound to the browser that began it by the SHA-256 of a cookie
-- (whose value also derives the PKCE verifier, so nothing here lets a copy of the database
-- finish it). Taken (deleted) by the callback that uses it: a replayed callback finds nothing.
CREATE TABLE upstream_sign_ins (
  state_hash   bytea PRIMARY KEY,
  provider     text NOT NULL REFERENCES identity_providers ON DELETE CASCADE,
  browser_hash bytea NOT NULL,
  nonce        text NOT NULL,
  return_to    text NOT NULL,
  acr          text,
  link_user    bigint REFERENCES users ON DELETE CASCADE,
  expires_at   timestamptz NOT NULL
);
CREATE INDEX upstream_sign_ins_expires ON upstream_sign_ins (expires_at);

-- A person made by a provider has no password of the box (a random one nobody knows stands in
-- the NOT NULL column): the password form and a reset link are not their way in.
ALTER TABLE users ADD COLUMN password_set boolean NOT NULL DEFAULT true;

-- The provider a browser signed in through (null: the box's own sign-in), which a Client that
-- accepts only some providers checks; a sign-in in steps carries it until it is done.
ALTER TABLE browser_sessions ADD COLUMN provider text;
ALTER TABLE sign_in_steps ADD COLUMN provider text;
