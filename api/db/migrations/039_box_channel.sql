-- Each box's own channel and locks (issue 82: each hosted box stays its own). Boxes may share a
-- database, each in its schema with its role, and PostgreSQL lets every role of a database LISTEN
-- and NOTIFY on any channel, take any advisory lock, and see in pg_locks the key of every advisory
-- lock held: another box's role heard this box's changes on the shared channel `boxauth`, could
-- send into its feed, and could take and keep its locks. So:
--
-- The box announces on a channel named by a secret of its own, made here and kept where only its
-- role reads: a row of box_settings. Never in a function's body: pg_proc is readable by every role.
-- Its outboxes' wakes and read fences go on channels named after it (api/db/notify.ts).
INSERT INTO box_settings (name, value)
  VALUES ('change_channel', 'boxauth_' || replace(gen_random_uuid()::text, '-', ''))
  ON CONFLICT (name) DO NOTHING;

-- Its locks are rows of its own table, locked for a transaction (FOR UPDATE, or FOR SHARE where
-- many may hold one at once): no other role may lock them, whatever it knows. A kind of lock taken
-- for many things (a grant, an address) has slots, and a thing takes the slot of its hash
-- (api/store/box-locks.ts, whose SLOTS says how many each kind has). holder_pid and holder_start
-- make a lease held by a connection rather than a transaction (the upkeep's): the backend holding
-- it, and when that backend started, since PostgreSQL gives a pid out again.
CREATE TABLE box_locks (
  kind         text NOT NULL,
  slot         integer NOT NULL,
  holder_pid   integer,
  holder_start timestamptz,
  PRIMARY KEY (kind, slot)
);
INSERT INTO box_locks (kind, slot)
  SELECT kind, slot
  FROM (VALUES ('records', 1), ('keys', 1), ('email_key', 1), ('notice_events', 1), ('upkeep', 1),
               ('grant', 4096), ('register', 64), ('upstream', 64), ('ssf_stream', 64)) AS k (kind, slots),
       generate_series(0, slots - 1) AS slot;

-- Where a change of the box is announced, `payload` as the change feed reads it: on the box's own
-- channel; and on the shared channel `boxauth` too, as every release before this one did, only
-- while processes of such a release listen there for the box and none of this release listens
-- (a rollback, or the moment between this migration and this release's first feed). While both
-- listen, the feeds of this release tell the older ones by cutting their connections
-- (api/db/older-feeds.ts): nothing of the box goes on the shared channel while a feed of this
-- release hears it. Both are found by the names they connect with (application_name), among the
-- connections of the box's role (its schema's owner, or the role writing).
--
-- The box's schema is named, not found on the search_path: a person may write to its tables from
-- another. What it reads is kept for the rest of the transaction in settings local to it (seen
-- only by this session): a table's rows are announced one by one.
CREATE FUNCTION boxauth_announce(box text, payload text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  channel text;
  shared boolean;
BEGIN
  IF current_setting('boxauth.announcing', true) IS DISTINCT FROM box THEN
    EXECUTE format('SELECT value FROM %I.box_settings WHERE name = $1', box) INTO channel USING 'change_channel';
    SELECT coalesce(bool_or(application_name = 'boxauth change feed') AND NOT bool_or(application_name = 'boxauth box feed'), false)
      INTO shared
      FROM pg_stat_activity
      WHERE datname = current_database()
        AND (usename = current_user OR usesysid = (SELECT nspowner FROM pg_namespace WHERE nspname = box));
    PERFORM set_config('boxauth.announcing', box, true), set_config('boxauth.channel', channel, true),
      set_config('boxauth.shared', shared::text, true);
  ELSE
    channel := current_setting('boxauth.channel');
    shared := current_setting('boxauth.shared')::boolean;
  END IF;
  PERFORM pg_notify(channel, payload);
  IF shared THEN
    PERFORM pg_notify('boxauth', payload);
  END IF;
END $$;

-- The triggers' functions announce through boxauth_announce, with the payloads they made before.
-- replace: the previous release's payload, on `boxauth` while only that release listens (boxauth_announce)
CREATE OR REPLACE FUNCTION boxauth_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('SELECT %I.boxauth_announce($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, json_build_object(
    'schema', TG_TABLE_SCHEMA,
    'table', TG_TABLE_NAME,
    'id', CASE WHEN TG_OP = 'DELETE' THEN OLD.id::text ELSE NEW.id::text END
  )::text;
  RETURN NULL;
END $$;

-- replace: the previous release's payload, on `boxauth` while only that release listens (boxauth_announce)
CREATE OR REPLACE FUNCTION boxauth_notify_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('SELECT %I.boxauth_announce($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, json_build_object(
    'schema', TG_TABLE_SCHEMA, 'table', TG_TABLE_NAME, 'id', OLD.id::text,
    'key', encode(OLD.access_token_hash, 'hex'))::text;
  RETURN NULL;
END $$;

-- replace: the previous release's payload, on `boxauth` while only that release listens (boxauth_announce)
CREATE OR REPLACE FUNCTION boxauth_notify_membership() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('SELECT %I.boxauth_announce($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, json_build_object(
    'schema', TG_TABLE_SCHEMA, 'table', 'users',
    'id', CASE WHEN TG_OP = 'DELETE' THEN OLD.user_id::text ELSE NEW.user_id::text END)::text;
  RETURN NULL;
END $$;
