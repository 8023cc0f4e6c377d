-- The device authorization grant (RFC 8628): a device (kubectl on a machine
-- without a browser) gets a device code and shows its person a user code; the
-- person enters it on the box, signs in and allows; the device's polling then
-- gets the tokens. Only the device code's SHA-256 is kept; the user code is short
-- and typed by people, so it lives briefly and its guessing is throttled.
CREATE TABLE device_codes (
  code_hash      bytea PRIMARY KEY,
  user_code      text NOT NULL UNIQUE,           -- 8 letters, no vowels, stored without the dash
  client_id      text NOT NULL REFERENCES clients ON DELETE CASCADE,
  scope          text,
  expires_at     timestamptz NOT NULL,
  interval_s     integer NOT NULL,               -- the polling interval the device must keep (slow_down adds 5)
  polled_at      timestamptz,
  decision       text,                           -- null: pending; 'allowed' or 'denied'
  user_id        bigint REFERENCES users ON DELETE CASCADE,
  auth_time      timestamptz,
  sid            uuid,
  used_at        timestamptz
);
CREATE INDEX device_codes_client ON device_codes (client_id);
CREATE INDEX device_codes_expires ON device_codes (expires_at);
