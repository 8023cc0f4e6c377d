-- Hooks (crds/hook.yaml): the team's own code the box calls at a moment of a sign-in or an
-- issuance (api/hooks/). Shaped as webhooks are: the resource as jsonb, owned by a Kubernetes
-- resource or by the REST API; the signing secret sealed under the box's factor key, never
-- hashed: the box signs with it.
CREATE TABLE hooks (
  id            text PRIMARY KEY,
  resource      jsonb NOT NULL,
  secret_sealed bytea,
  managed_by    text,
  version       bigint NOT NULL DEFAULT 1,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
-- Every process keeps the box's Hooks in memory (api/hooks/directory.ts): a change is heard at once.
CREATE TRIGGER hooks_notify AFTER INSERT OR UPDATE OR DELETE ON hooks
  FOR EACH ROW EXECUTE FUNCTION boxauth_notify();
