-- Closing a session closes every session made from it (refreshed, or exchanged
-- by another client: RFC 8693), found by walking `parent` down.
CREATE INDEX sessions_parent ON sessions (parent) WHERE parent IS NOT NULL;
