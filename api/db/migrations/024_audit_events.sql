-- The audit trail (docs/operations/audit.md): every audit event but the token endpoint's own
-- (token_issued, token_refused: the log stream only) and the decisions the gate allowed. An event
-- about a change is written in the transaction of the change, so that neither is without the
-- other; `detail` is the event as the log line has it, never a secret. The columns beside it are
-- what GET /AuditEvent searches by. `id` orders the trail (newest first) and is its cursor.
-- Kept BOXAUTH_AUDIT_RETENTION_DAYS and at most BOXAUTH_AUDIT_MAX_ROWS rows (api/jobs/purge.ts).
CREATE TABLE audit_events (
  id            bigserial PRIMARY KEY,
  at            timestamptz NOT NULL DEFAULT now(),
  event         text NOT NULL,
  -- What happened within the event (`created`, `deactivated`, `refused`…), and whether it went
  -- through: `success` or `failure` (a refused sign-in, decision or upstream sign-in).
  action        text,
  outcome       text NOT NULL,
  -- Who acted: a client, a person, the session of their token.
  actor_client  text,
  actor_user    text,
  actor_session text,
  -- Whom and what it concerns: a person, a client, a record (kind and id).
  subject_user  text,
  client        text,
  resource_type text,
  resource_id   text,
  detail        jsonb NOT NULL
);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_actor_user ON audit_events (actor_user, id) WHERE actor_user IS NOT NULL;
CREATE INDEX audit_events_actor_client ON audit_events (actor_client, id) WHERE actor_client IS NOT NULL;
CREATE INDEX audit_events_subject_user ON audit_events (subject_user, id) WHERE subject_user IS NOT NULL;
CREATE INDEX audit_events_client ON audit_events (client, id) WHERE client IS NOT NULL;
CREATE INDEX audit_events_resource ON audit_events (resource_type, resource_id, id) WHERE resource_type IS NOT NULL;
CREATE INDEX audit_events_event ON audit_events (event, id);
