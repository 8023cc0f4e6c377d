-- The outbox of notices (api/notices/, api/store/notices.ts): what the box tells other systems
-- (back-channel logout tokens, Shared Signals events, webhooks), written in the transaction of the
-- change it reports and sent after it commits.
--
-- An event of the outbox: an audit event recorded in the transaction of its change (api/audit.ts
-- recordIn), with the facts its audit line leaves out (the sessions a close ended). The dispatcher
-- fans each out into notices and deletes it, in one transaction, in order of id.
CREATE TABLE notice_events (
  id     bigserial PRIMARY KEY,
  at     timestamptz NOT NULL DEFAULT now(),
  event  jsonb NOT NULL,
  facts  jsonb NOT NULL DEFAULT '{}'
);

-- One notice for one destination of one kind (a client's back-channel logout URI, an SSF stream,
-- a Webhook), about a `subject` (a person's sub, a record; '' for none). Sent one at a time per
-- destination and subject, in order of id; `attempts`, counted up by each
-- claim, says whose lease a row is under. `quiet`: a notice of a give-up, whose own give-up is
-- not told again (no loop between two dead receivers).
CREATE TABLE notices (
  id              bigserial PRIMARY KEY,
  kind            text NOT NULL,
  destination     text NOT NULL,
  subject         text NOT NULL DEFAULT '',
  payload         jsonb NOT NULL,
  event_id        bigint,
  created_at      timestamptz NOT NULL DEFAULT now(),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  attempts        integer NOT NULL DEFAULT 0,
  last_error      text,
  quiet           boolean NOT NULL DEFAULT false
);
-- The head of each queue: a destination's notices about one subject.
CREATE INDEX notices_queue ON notices (kind, destination, subject, id);
