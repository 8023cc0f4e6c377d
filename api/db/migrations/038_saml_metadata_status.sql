-- What the box last made of a SAML app's metadata at its URL (Client.saml.metadata.url;
-- api/saml/metadata-status.ts): read (with what the app says of itself) or refused (why), when,
-- from which URL, and when to look again. The operator sets the Client's SamlMetadataReady
-- condition from it, the admin console shows it. claimed_until is the lease of the one process
-- fetching it now: several processes and replicas claim in one statement, and one fetches.
CREATE TABLE saml_metadata_status (
  client_id     text PRIMARY KEY REFERENCES clients (id) ON DELETE CASCADE,
  url           text,                 -- the URL the outcome is of; NULL until the first one
  outcome       text CHECK (outcome IN ('read', 'refused')),
  reason        text,                 -- refused: SamlMetadataUnreachable or SamlMetadataInvalid
  message       text,                 -- refused: what went wrong, without the address a name resolved to
  summary       jsonb,                -- read: entity ID, ACS, SLO endpoints, certificates' expiry
  fetched_at    timestamptz,
  refresh_after timestamptz,          -- looked at again from then on (the document's caching time)
  claimed_until timestamptz           -- a process is fetching it until then
);
