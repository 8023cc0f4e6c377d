-- Room in each page of sessions for a new version of its rows: a refresh token's
-- sliding expiration is then written in place (a HOT update, no index entries).
ALTER TABLE sessions SET (fillfactor = 90);
