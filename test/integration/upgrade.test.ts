// Upgrades: what a box's existing rows become when a migration adds to them.
import { expect } from 'chai';
import fs from 'node:fs/promises';
import path from 'node:path';
import { migrate } from '../../api/db/migrate.js';
import { createPool } from '../../api/db/pool.js';
import { createUser } from '../../api/store/users.js';
import { projectPath } from '../../api/paths.js';
import { createDatabase } from '../support/postgres.js';

const MIGRATIONS = projectPath('api', 'db', 'migrations');

describe('upgrades', function () {
  it('people who were there before OpenID Connect are not vouched for (email_verified false); those added after are', async function () {
    const pool = createPool(await createDatabase('upgrade'), 2);
    try {
      // The box as it was before 007: its migrations applied by hand, and two people in it,
      // one of whom may have signed up as somebody else's address.
      await pool.query('CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
      for (const name of (await fs.readdir(MIGRATIONS)).filter((n) => n.endsWith('.sql') && n < '007').sort()) {
        await pool.query(await fs.readFile(path.join(MIGRATIONS, name), 'utf8'));
        await pool.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name]);
      }
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
});
