-- The Shared Signals transmitter (issue 55; api/ssf/): the event streams receivers make through the
-- stream management API (SSF 1.0 §8.1), the subjects they add to or remove from a stream (§8.1.3),
-- and, for a stream delivered by poll (RFC 8936), the SETs waiting for the receiver to fetch and
-- acknowledge them. A stream belongs to one receiver (a box Client): every query names it.
CREATE TABLE ssf_streams (
  id text PRIMARY KEY,
  -- A receiver deleted takes its streams with it: a client made again with its id starts with none.
  client_id text NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
  description text,
  events_requested text[] NOT NULL DEFAULT '{}',
  -- urn:ietf:rfc:8935 (push) or urn:ietf:rfc:8936 (poll)
  delivery_method text NOT NULL,
  endpoint_url text,
  -- The receiver's own credential for its push endpoint (SSF 1.0 §8.1.1: authorization_header),
  -- sent as it was given; never logged, never in a notice's payload.
  authorization_header text,
  status text NOT NULL DEFAULT 'enabled',
  status_reason text,
  -- When the receiver last asked for a verification event (SSF 1.0 §8.1.4.2: min_verification_interval).
  verification_requested_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ssf_streams_client ON ssf_streams (client_id, created_at);

-- The people a receiver named on a stream: added (events about them are sent, when the policy lets
-- the receiver have them) or removed (never sent, although the stream's default is every person).
CREATE TABLE ssf_stream_subjects (
  stream_id text NOT NULL REFERENCES ssf_streams (id) ON DELETE CASCADE,
  user_id bigint NOT NULL,
  included boolean NOT NULL,
  PRIMARY KEY (stream_id, user_id)
);

-- SETs of poll streams, until the receiver acknowledges them (RFC 8936 §2.4).
CREATE TABLE ssf_poll_sets (
  stream_id text NOT NULL REFERENCES ssf_streams (id) ON DELETE CASCADE,
  jti text NOT NULL,
  token text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (stream_id, jti)
);
CREATE INDEX ssf_poll_sets_order ON ssf_poll_sets (stream_id, created_at);
