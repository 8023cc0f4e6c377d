-- What a person allowed a client, and the codes issued to it, go with the client:
-- a client deleted and re-created under the same id (by someone else, with another
-- redirect URI) starts with no consent and no code of its predecessor.
DELETE FROM consents c WHERE NOT EXISTS (SELECT 1 FROM clients WHERE id = c.client_id);
DELETE FROM authorization_codes a WHERE NOT EXISTS (SELECT 1 FROM clients WHERE id = a.client_id);
CREATE INDEX consents_client ON consents (client_id);
CREATE INDEX authorization_codes_client ON authorization_codes (client_id);
ALTER TABLE consents ADD CONSTRAINT consents_client_fk
  FOREIGN KEY (client_id) REFERENCES clients ON DELETE CASCADE;
ALTER TABLE authorization_codes ADD CONSTRAINT authorization_codes_client_fk
  FOREIGN KEY (client_id) REFERENCES clients ON DELETE CASCADE;
