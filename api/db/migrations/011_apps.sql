-- Apps the box guards (the decision point), shaped as Clients and AccessPolicies are:
-- the resource as jsonb, owned by a Kubernetes resource or by the REST API.
CREATE TABLE apps (
  id          text PRIMARY KEY,
  resource    jsonb NOT NULL,
  managed_by  text,
  version     bigint NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER apps_notify AFTER INSERT OR UPDATE OR DELETE ON apps
  FOR EACH ROW EXECUTE FUNCTION boxauth_notify();

-- RFC 8707: the audience an authorization request asked for (resource) travels with its code.
ALTER TABLE authorization_codes ADD COLUMN audience text;

-- Refused decisions of the decision point, kept a while so that `boxauth explain <id>` can
-- replay them (written in batches, off the hot path; purged after BOXAUTH_DECISION_RETENTION_HOURS).
CREATE TABLE decisions (
  id          uuid PRIMARY KEY,
  app         text NOT NULL,
  at          timestamptz NOT NULL,
  status      integer NOT NULL,
  reason      text NOT NULL,
  request     jsonb NOT NULL,
  policies    jsonb NOT NULL
);
CREATE INDEX decisions_at ON decisions (at);
