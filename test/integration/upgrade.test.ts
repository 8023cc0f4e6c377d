// Upgrades: what a box's existing rows become when a migration adds to them.
import { expect } from 'chai';
import fs from 'node:fs/promises';
import path from 'node:path';
import { migrate } from '../../api/db/migrate.js';
import { createPool, type Pool } from '../../api/db/pool.js';
import { apps } from '../../api/store/apps.js';
import { ConstraintViolation } from '../../api/store/constraints.js';
import { createUser } from '../../api/store/users.js';
import { projectPath } from '../../api/paths.js';
import { createDatabase } from '../support/postgres.js';

const MIGRATIONS = projectPath('api', 'db', 'migrations');

/** A new database as a box left it before migration `next`: the earlier migrations applied by hand. */
async function boxBefore(database: string, next: string): Promise<Pool> {
  const pool = createPool(await createDatabase(database), 2);
  await pool.query('CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
  for (const name of (await fs.readdir(MIGRATIONS)).filter((n) => n.endsWith('.sql') && n < next).sort()) {
    await pool.query(await fs.readFile(path.join(MIGRATIONS, name), 'utf8'));
    await pool.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name]);
  }
  return pool;
}

describe('upgrades', function () {
  it('people who were there before OpenID Connect are not vouched for (email_verified false); those added after are', async function () {
    // The box as it was before 007, and two people in it, one of whom may have signed up as somebody else's address.
    const pool = await boxBefore('upgrade', '007');
    try {
      await pool.query("INSERT INTO users (email, password_hash) VALUES ('admin@example.com', 'x'), ('ceo@example.com', 'x')");

      expect(await migrate(pool)).to.include('007_openid.sql');
      const { rows } = await pool.query<{ email: string; email_verified: boolean }>('SELECT email, email_verified FROM users ORDER BY id');
      expect(rows).to.deep.equal([
        { email: 'admin@example.com', email_verified: false },
        { email: 'ceo@example.com', email_verified: false },
      ]);
      // An administrator's new user is vouched for (the REST API's users), a sign-up is not.
      const added = await createUser(pool, { email: 'new@example.com', passwordHash: 'x', data: null, groupIds: [] });
      const signedUp = await createUser(pool, {
        email: 'me@example.com',
        passwordHash: 'x',
        data: null,
        groupIds: [],
        emailVerified: false,
      });
      expect([added.emailVerified, signedUp.emailVerified]).to.deep.equal([true, false]);
    } finally {
      await pool.end();
    }
  });

  it('Apps that shared an audience before 012 stay, but none holds it (decides) until one is written again', async function () {
    const pool = await boxBefore('upgrade_apps', '012');
    try {
      await pool.query(`INSERT INTO apps (id, resource) VALUES
        ('a', '{"resourceType": "App", "urls": ["https://a.example"], "audience": "https://shared.example"}'),
        ('b', '{"resourceType": "App", "urls": ["https://shared.example"]}'),
        ('c', '{"resourceType": "App", "urls": ["https://c.example"]}')`);

      expect(await migrate(pool)).to.include('012_app_audience.sql');
      const held = async () => Object.fromEntries((await apps.all(pool)).map((h) => [h.app.id, h.holdsAudience]));
      expect(await held()).to.deep.equal({ a: false, b: false, c: true });
      const a = (await apps.read(pool, 'a'))!.resource;
      await apps.write(pool, a, { managedBy: null });
      expect(await held()).to.deep.equal({ a: true, b: false, c: true });
      const b = (await apps.read(pool, 'b'))!.resource;
      const refused = await apps.write(pool, b, { managedBy: null }).catch((err: unknown) => err);
      expect(refused).to.be.instanceOf(ConstraintViolation);
      expect((refused as Error).message).to.include('App "a"');
    } finally {
      await pool.end();
    }
  });
});
