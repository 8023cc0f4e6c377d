-- An authorization code bound to a DPoP key (RFC 9449 §10): the JWK SHA-256
-- thumbprint the authorization request named (dpop_jkt), or the key of the
-- proof its pushed request carried. The code is redeemed only with a proof of
-- that key.
ALTER TABLE authorization_codes ADD COLUMN dpop_jkt text;
