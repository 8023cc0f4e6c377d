// The database a busy box has after a while: 100,000 registered clients,
// 5,000,000 sessions (half opaque, half JWT; a quarter with refresh tokens) and
// 1,000,000 DPoP proofs in the replay ledger, written straight into the box's
// tables with generate_series while the box is stopped. Quickly: the sessions get
// time-ordered ids as the box's (each insert at the right edge of the primary key),
// and the other indexes of sessions are dropped and built again once the rows are in
// (one sorted build each instead of millions of random insertions).
import pg from 'pg';
import { hashSecret } from '../../api/credentials/secrets.js';

export interface ScaleSizes {
  clients: number;
  sessions: number;
  proofs: number;
}

export async function seedScale(databaseUrl: string, sizes: ScaleSizes, log: (msg: string) => void): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  const t0 = Date.now();
  const done = (what: string): void => log(`${what} (${Math.round((Date.now() - t0) / 1000)} s)`);
  await db.connect();
  try {
    await db.query(`SET maintenance_work_mem = '256MB'`);
    const hash = await hashSecret('a secret no bench request presents');
    await db.query(
      `
      INSERT INTO clients (id, resource, secret_hash)
      SELECT 'scale-' || i, jsonb_build_object('resourceType', 'Client', 'grant_types', jsonb_build_array('client_credentials')), $2
      FROM generate_series(1, $1::int) AS i`,
      [sizes.clients, hash],
    );
    done(`${sizes.clients.toLocaleString('en')} clients`);
    const { rows: indexes } = await db.query<{ name: string; definition: string }>(
      `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
       WHERE schemaname = current_schema() AND tablename = 'sessions'
         AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = 'sessions'::regclass)`,
    );
    for (const index of indexes) await db.query(`DROP INDEX "${index.name}"`);
    try {
      const batch = 1_000_000;
      for (let inserted = 0; inserted < sizes.sessions; inserted += batch) {
        const n = Math.min(batch, sizes.sessions - inserted);
        // ids: UUIDv7-like, their milliseconds counting up to now (the box's own ids come after)
        await db.query(
          `
          INSERT INTO sessions (id, type, origin, client_id, start, exp, access_token_hash, refresh_token_hash, family, kid)
          SELECT id, 'client_credentials', 'client_credentials', 'scale-' || (1 + i % $3::int),
                 now() - interval '30 minutes', now() + interval '30 minutes',
                 CASE WHEN i % 2 = 0 THEN sha256(('access-' || i)::bytea) END,
                 CASE WHEN i % 4 = 1 THEN sha256(('refresh-' || i)::bytea) END,
                 id, CASE WHEN i % 2 = 1 THEN 'scale-kid' END
          FROM (SELECT (lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint - $4::bigint + i), 12, '0') || '7'
                        || substr(md5(i::text), 1, 19))::uuid AS id, i
                FROM generate_series($1::int, $2::int) AS i) AS s`,
          [inserted + 1, inserted + n, sizes.clients, sizes.sessions],
        );
        done(`${(inserted + n).toLocaleString('en')} sessions`);
      }
    } finally {
      for (const index of indexes) await db.query(index.definition);
    }
    done(`the indexes of sessions built again (${indexes.map((i) => i.name).join(', ')})`);
    // proofs still within their window for the whole run: none is purged meanwhile
    await db.query(
      `INSERT INTO dpop_proofs (digest, expires_at)
       SELECT sha256(('scale-proof-' || i)::bytea), now() + interval '1 hour' FROM generate_series(1, $1::int) AS i`,
      [sizes.proofs],
    );
    done(`${sizes.proofs.toLocaleString('en')} DPoP proofs`);
    await db.query('VACUUM ANALYZE clients');
    await db.query('VACUUM ANALYZE sessions');
    await db.query('VACUUM ANALYZE dpop_proofs');
    await db.query('CHECKPOINT').catch(() => undefined); // needs superuser or pg_checkpoint; only evens out the runs
    done('vacuumed, analyzed and checkpointed');
  } finally {
    await db.end();
  }
}
