-- DPoP (RFC 9449). A session's access token may be bound to a client's key: `jkt` is
-- that key's RFC 7638 thumbprint (the JWT's cnf.jkt; opaque tokens are bound through
-- this column alone). A public client's refresh token is bound too (RFC 9449 §5):
-- `refresh_jkt`, set only on sessions holding such a token.
ALTER TABLE sessions ADD COLUMN jkt text, ADD COLUMN refresh_jkt text;

-- The proofs seen, so that a proof is accepted once in the whole box, whichever of its
-- processes it reaches (docs/architecture.md §10): the SHA-256 of the key's thumbprint and the
-- proof's jti, kept until no proof with that jti could be accepted anyway (its iat
-- window has passed); the purge job deletes the rest.
CREATE TABLE dpop_proofs (
  digest     bytea PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
CREATE INDEX dpop_proofs_expires_at ON dpop_proofs (expires_at);
