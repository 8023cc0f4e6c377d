-- Clients, access policies, sessions and signing keys of one box.
-- Every table lives in the schema of the box (the connection's search_path).

-- Caches in every API process are invalidated through NOTIFY: a trigger on each
-- table announces which record changed, whoever changed it (the API, the
-- operator, or a person with psql). Delivery happens at commit.
CREATE FUNCTION boxauth_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('boxauth', json_build_object(
    'schema', TG_TABLE_SCHEMA,
    'table', TG_TABLE_NAME,
    'id', CASE WHEN TG_OP = 'DELETE' THEN OLD.id::text ELSE NEW.id::text END
  )::text);
  RETURN NULL;
END $$;

CREATE TABLE clients (
  id          text PRIMARY KEY,
  resource    jsonb NOT NULL,             -- the Client as the API shows it: never the secret
  secret_hash text,                       -- argon2id
  managed_by  text,                       -- the Kubernetes resource that owns the record, if any
  version     bigint NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER clients_notify AFTER INSERT OR UPDATE OR DELETE ON clients
  FOR EACH ROW EXECUTE FUNCTION boxauth_notify();

CREATE TABLE access_policies (
  id          text PRIMARY KEY,
  resource    jsonb NOT NULL,
  managed_by  text,
  version     bigint NOT NULL DEFAULT 1,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER access_policies_notify AFTER INSERT OR UPDATE OR DELETE ON access_policies
  FOR EACH ROW EXECUTE FUNCTION boxauth_notify();

-- One row per access token. Tokens are stored only as SHA-256 digests.
CREATE TABLE sessions (
  id                 uuid PRIMARY KEY,
  type               text NOT NULL,          -- the grant that issued the access token
  origin             text NOT NULL,          -- the grant that started the family (decides refresh settings)
  client_id          text NOT NULL,
  user_id            bigint,
  audience           text,
  scope              text,
  start              timestamptz NOT NULL,
  exp                timestamptz,            -- null: valid until closed
  access_token_hash  bytea,                  -- null for JWT access tokens (found by jti)
  refresh_token_hash bytea,
  refresh_token_exp  timestamptz,
  refresh_used_at    timestamptz,            -- rotation: a used refresh token presented again closes the family
  active             boolean NOT NULL DEFAULT true,
  "end"              timestamptz,
  parent             uuid,
  family             uuid NOT NULL,
  kid                text,                   -- key that signed a JWT access token
  details            jsonb,                  -- e.g. the workload identity that obtained the token
  purge_at           timestamptz             -- when the row may be deleted; null: not while it can be used
);
CREATE UNIQUE INDEX sessions_access_token_hash ON sessions (access_token_hash) WHERE access_token_hash IS NOT NULL;
CREATE UNIQUE INDEX sessions_refresh_token_hash ON sessions (refresh_token_hash) WHERE refresh_token_hash IS NOT NULL;
CREATE INDEX sessions_family ON sessions (family);
CREATE INDEX sessions_purge_at ON sessions (purge_at) WHERE purge_at IS NOT NULL;
CREATE INDEX sessions_client ON sessions (client_id);

-- Inserts need no announcement (nothing caches a session before it exists);
-- a session closed, shortened or deleted while usable does. Caches find an opaque
-- token's session by its digest, so the announcement carries that too.
CREATE FUNCTION boxauth_notify_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('boxauth', json_build_object(
    'schema', TG_TABLE_SCHEMA, 'table', TG_TABLE_NAME, 'id', OLD.id::text,
    'key', encode(OLD.access_token_hash, 'hex'))::text);
  RETURN NULL;
END $$;
CREATE TRIGGER sessions_notify_update AFTER UPDATE ON sessions FOR EACH ROW
  WHEN (OLD.active IS DISTINCT FROM NEW.active OR OLD.exp IS DISTINCT FROM NEW.exp)
  EXECUTE FUNCTION boxauth_notify_session();
CREATE TRIGGER sessions_notify_delete AFTER DELETE ON sessions FOR EACH ROW
  WHEN (OLD.active)
  EXECUTE FUNCTION boxauth_notify_session();

CREATE TABLE signing_keys (
  id          text PRIMARY KEY,              -- the JWK `kid`
  alg         text NOT NULL,
  private_jwk jsonb NOT NULL,
  public_jwk  jsonb NOT NULL,
  external    boolean NOT NULL DEFAULT false, -- provided by BOXAUTH_SIGNING_KEY rather than generated
  created_at  timestamptz NOT NULL DEFAULT now(),
  retired_at  timestamptz                    -- stopped signing; still published while its tokens live
);
CREATE TRIGGER signing_keys_notify AFTER INSERT OR UPDATE OR DELETE ON signing_keys
  FOR EACH ROW EXECUTE FUNCTION boxauth_notify();
