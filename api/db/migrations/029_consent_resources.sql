-- The resources (RFC 8707) a person's consent was given for: a consent remembered for one resource
-- (an MCP server, an App's audience) does not let the client have tokens for another without the
-- person being asked (api/oauth/consents.ts). The box's own API, asked for by naming no resource,
-- is kept as the empty string. A row written before this column holds NULL, read as that alone:
-- before resource indicators, a consent was only ever given for the box's own API.
ALTER TABLE consents ADD COLUMN resources text[];
