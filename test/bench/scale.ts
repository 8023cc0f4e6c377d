// The database a busy box has after a while: 100,000 registered clients and
// 5,000,000 sessions (half opaque, half JWT; a quarter with refresh tokens),
// written straight into the box's tables with generate_series, in batches.
import pg from 'pg';
import { hashSecret } from '../../api/credentials/secrets.js';

export async function seedScale(databaseUrl: string, clients: number, sessions: number, log: (msg: string) => void): Promise<void> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const hash = await hashSecret('a secret no bench request presents');
    await db.query(
      `
      INSERT INTO clients (id, resource, secret_hash)
      SELECT 'scale-' || i, jsonb_build_object('resourceType', 'Client', 'grant_types', jsonb_build_array('client_credentials')), $2
      FROM generate_series(1, $1::int) AS i`,
      [clients, hash],
    );
    log(`${clients.toLocaleString('en')} clients`);
    const batch = 500_000;
    for (let done = 0; done < sessions; done += batch) {
      const n = Math.min(batch, sessions - done);
      await db.query(
        `
        INSERT INTO sessions (id, type, origin, client_id, start, exp, access_token_hash, refresh_token_hash, family, kid)
        SELECT id, 'client_credentials', 'client_credentials', 'scale-' || (1 + i % $3::int),
               now() - interval '30 minutes', now() + interval '30 minutes',
               CASE WHEN i % 2 = 0 THEN sha256(('access-' || i)::bytea) END,
               CASE WHEN i % 4 = 1 THEN sha256(('refresh-' || i)::bytea) END,
               id, CASE WHEN i % 2 = 1 THEN 'scale-kid' END
        FROM (SELECT gen_random_uuid() AS id, i FROM generate_series($1::int, $2::int) AS i) AS s`,
        [done + 1, done + n, clients],
      );
      log(`${(done + n).toLocaleString('en')} sessions`);
    }
    await db.query('VACUUM ANALYZE clients');
    await db.query('VACUUM ANALYZE sessions');
    await db.query('CHECKPOINT').catch(() => undefined); // needs superuser or pg_checkpoint; only evens out the runs
  } finally {
    await db.end();
  }
}
