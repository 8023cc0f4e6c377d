-- OpenID Connect's claims parameter (Core §5.5): the claims a relying party asked
-- for by name travel with the code to the token sessions (their details).
ALTER TABLE authorization_codes ADD COLUMN claims jsonb;
