-- A password change ends every pending code and device code of the person, and a
-- sign-out those of the browser (api/oauth/closing.ts): found by these columns.
CREATE INDEX authorization_codes_user ON authorization_codes (user_id);
CREATE INDEX authorization_codes_sid ON authorization_codes (sid) WHERE sid IS NOT NULL;
CREATE INDEX device_codes_user ON device_codes (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX device_codes_sid ON device_codes (sid) WHERE sid IS NOT NULL;
