-- Clients that named themselves (issue 54): a Client ID Metadata Document's, a dynamic
-- registration's (RFC 7591), marked by their resource's `registration`. Dynamic registrations are
-- counted per network address per hour (api/store/clients.ts registerClientFrom) and the unused
-- ones removed by the upkeep: both find them by this index, never by a scan of every client.
CREATE INDEX clients_registered ON clients ((resource->'registration'->>'address'), created_at)
  WHERE resource ? 'registration';
