-- The admin console's Apps tab lists an App's newest kept refusals (GET /authz/decisions?app=<id>):
-- read newest first within one app, from the index, however many other apps' refusals the table holds.
CREATE INDEX decisions_app_at ON decisions (app, at DESC, id DESC);
