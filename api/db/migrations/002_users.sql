-- Users and groups of one box. A user's groups decide which Group-linked access
-- policies apply to the user's tokens.

CREATE TABLE users (
  id            bigserial PRIMARY KEY,
  email         text NOT NULL,
  password_hash text NOT NULL,            -- argon2id
  data          text,                     -- a string holding JSON, as the API shows it
  status        text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX users_email ON users (lower(email));
CREATE TRIGGER users_notify AFTER INSERT OR UPDATE OR DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION boxauth_notify();

CREATE TABLE groups (
  id          bigserial PRIMARY KEY,
  name        text NOT NULL,
  description text,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX groups_name ON groups (lower(name));
CREATE TRIGGER groups_notify AFTER INSERT OR UPDATE OR DELETE ON groups
  FOR EACH ROW EXECUTE FUNCTION boxauth_notify();

CREATE TABLE user_groups (
  user_id  bigint NOT NULL REFERENCES users ON DELETE CASCADE,
  group_id bigint NOT NULL REFERENCES groups ON DELETE CASCADE,
  PRIMARY KEY (user_id, group_id)
);
CREATE INDEX user_groups_group ON user_groups (group_id);

-- A membership change is a change of the user (their policies change with it).
CREATE FUNCTION boxauth_notify_membership() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('boxauth', json_build_object(
    'schema', TG_TABLE_SCHEMA, 'table', 'users',
    'id', CASE WHEN TG_OP = 'DELETE' THEN OLD.user_id::text ELSE NEW.user_id::text END)::text);
  RETURN NULL;
END $$;
CREATE TRIGGER user_groups_notify AFTER INSERT OR UPDATE OR DELETE ON user_groups
  FOR EACH ROW EXECUTE FUNCTION boxauth_notify_membership();

-- Sessions of a user are found (and closed) by user.
CREATE INDEX sessions_user ON sessions (user_id) WHERE user_id IS NOT NULL;
