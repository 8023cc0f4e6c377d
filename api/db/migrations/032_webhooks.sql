-- Webhooks (crds/webhook.yaml): where the box POSTs its events as CloudEvents, signed per the
-- Standard Webhooks specification (api/webhooks/). Shaped as identity providers are: the resource
-- as jsonb, owned by a Kubernetes resource or by the REST API; the signing secret sealed under the
-- box's factor key (api/credentials/sealing.ts), never hashed: the box signs with it.
--
-- gone_at: when the receiver answered 410 Gone ("it's no longer interested in receiving webhooks
-- from this source. Sender should disable the webhook endpoint"); no notice is made for it until
-- the Webhook is written again with a change.
CREATE TABLE webhooks (
  id            text PRIMARY KEY,
  resource      jsonb NOT NULL,
  secret_sealed bytea,
  managed_by    text,
  version       bigint NOT NULL DEFAULT 1,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  gone_at       timestamptz
);
