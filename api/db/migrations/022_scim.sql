-- SCIM 2.0 (RFC 7643/7644) is a door onto the same people and groups (docs/architecture.md §12): what it
-- adds is kept beside them. `active` false is a person turned off by their directory: the
-- turning off closes what they obtained (api/people/accounts.ts setActive), and no sign-in holds
-- them while it stays false (store/users.ts holdPerson). `external_id` is the directory's own id
-- of the record (RFC 7643 §3.1: set by the client, compared exactly). `scim` holds the
-- attributes the box has no column for (name, displayName, emails, phoneNumbers, the enterprise
-- extension…), as the directory sent them, to be read back as sent.
ALTER TABLE users ADD COLUMN active boolean NOT NULL DEFAULT true;
ALTER TABLE users ADD COLUMN external_id text;
ALTER TABLE users ADD COLUMN scim jsonb;
CREATE INDEX users_external_id ON users (external_id) WHERE external_id IS NOT NULL;

ALTER TABLE groups ADD COLUMN external_id text;
ALTER TABLE groups ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX groups_external_id ON groups (external_id) WHERE external_id IS NOT NULL;
