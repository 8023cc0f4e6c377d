-- Mutual TLS (RFC 8705 §3). A session's access token may be bound to the client certificate
-- it was issued over: `x5t` is that certificate's SHA-256 thumbprint (the JWT's cnf."x5t#S256";
-- opaque tokens are bound through this column alone). Nullable: every session before is unbound.
ALTER TABLE sessions ADD COLUMN x5t text;
