-- Pushed authorization requests (RFC 9126): a client posts the parameters of an
-- authorization request to /auth/par and gets a request_uri for them; the browser
-- then brings only client_id and request_uri to /auth/authorize. Only the
-- request_uri's SHA-256 is kept, as for every other bearer secret. The row is
-- claimed by the first browser that brings it (browser_hash: the SHA-256 of its
-- CSRF cookie) and deleted when the answer goes back to the client, in the
-- transaction that issues the code: one DELETE … RETURNING decides which use wins.
CREATE TABLE pushed_requests (
  request_hash   bytea PRIMARY KEY,
  client_id      text NOT NULL REFERENCES clients ON DELETE CASCADE,
  params         jsonb NOT NULL,
  expires_at     timestamptz NOT NULL,
  browser_hash   bytea
);
CREATE INDEX pushed_requests_client ON pushed_requests (client_id);
CREATE INDEX pushed_requests_expires ON pushed_requests (expires_at);
