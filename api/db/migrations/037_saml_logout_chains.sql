-- A sign-out in a browser that reaches SAML apps with only an HTTP-Redirect SingleLogoutService
-- (api/saml/logout-chains.ts, docs/guides/saml-apps.md "Single Logout"): the browser goes to each
-- app in turn with a LogoutRequest and comes back with its LogoutResponse. RelayState carries at
-- most 80 bytes (SAML Bindings §3.4.3), so the chain is kept here, found by the SHA-256 of the
-- random handle RelayState carries, and only for the browser it was started in (the SHA-256 of its
-- CSRF cookie). `hops` are the apps in order, each with the ID of the LogoutRequest it is sent;
-- `position` is the hop whose answer is awaited, moved on by one UPDATE that names the position it
-- saw (an answer counts once, whatever races it). `finish` is where the browser goes at the end, a
-- place the box checked before the chain began. Minutes long; the upkeep deletes what expired.
CREATE TABLE saml_logout_chains (
  handle_hash bytea PRIMARY KEY,
  browser_hash bytea NOT NULL,
  hops jsonb NOT NULL,
  position integer NOT NULL DEFAULT 0,
  partial boolean NOT NULL,
  finish jsonb NOT NULL,
  expires_at timestamptz NOT NULL
);
