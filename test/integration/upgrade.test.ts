// Upgrades: what a box's existing rows become when a migration adds to them.
import argon2 from 'argon2';
import { expect } from 'chai';
import fs from 'node:fs/promises';
import path from 'node:path';
import { migrate } from '../../api/db/migrate.js';
import { createPool, type Pool } from '../../api/db/pool.js';
import { apps } from '../../api/store/apps.js';
import { ConstraintViolation } from '../../api/store/constraints.js';
import { createUser } from '../../api/store/users.js';
import { projectPath } from '../../api/paths.js';
import { Box } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { createDatabase } from '../support/postgres.js';

const MIGRATIONS = projectPath('api', 'db', 'migrations');

/** A new database as a box left it before migration `next`: the earlier migrations applied by hand. */
async function boxBefore(database: string, next: string): Promise<Pool> {
  return boxAt(await createDatabase(database), next);
}

async function boxAt(url: string, next: string): Promise<Pool> {
  const pool = createPool(url, 2);
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

  it('emails that became one account at 017: the box starts, the oldest keeps it, the newer cannot sign in until resolved', async function () {
    this.timeout(120_000);
    const url = await createDatabase('upgrade_email_key');
    const pool = await boxAt(url, '017');
    const hash = (password: string) => argon2.hash(password, { type: argon2.argon2id });
    try {
      // An administrator made élodie and kim; strangers signed up Élodie and the Kelvin sign's Kim beside them.
      await pool.query('INSERT INTO users (email, password_hash) VALUES ($1, $2), ($3, $4), ($5, $6), ($7, $8), ($9, $10)', [
        'élodie@example.com',
        await hash('elodie-password-1'),
        'kim@example.com',
        await hash('kim-password-1'),
        'Élodie@example.com',
        await hash('stranger-password-1'),
        '\u212Aim@example.com',
        await hash('stranger-password-2'),
        'solo@example.com',
        await hash('solo-password-1'),
      ]);
    } finally {
      await pool.end();
    }
    const box = await Box.start({ databaseUrl: url });
    try {
      const root = await box.rootToken();
      const warning = box.logs.find((line) => line.includes('same account as an older user'));
      expect(warning, box.logs.join('\n')).to.not.equal(undefined);
      expect(JSON.parse(warning!).users).to.deep.equal([3, 4]);
      // Every person is still there; the older account answers to its address in any form.
      expect((await box.json('GET', '/users?_count=100', undefined, root)).body.length).to.equal(6); // and the admin
      const signIn = (email: string, password: string) => new FormAgent(box).signIn(email, password);
      expect((await signIn('ÉLODIE@example.com', 'elodie-password-1')).status).to.equal(303);
      expect((await signIn('Élodie@example.com', 'stranger-password-1')).status).to.equal(401);
      expect((await signIn('\u212Aim@example.com', 'stranger-password-2')).status).to.equal(401);
      expect((await signIn('solo@example.com', 'solo-password-1')).status).to.equal(303);
      // Nobody new can take either address; an administrator gives the newer one another, and it signs in.
      expect((await box.json('POST', '/users', { email: 'ÉLODIE@example.com', password: 'x-password-1' }, root)).status).to.equal(422);
      const moved = await box.json('PUT', '/users/3', { email: 'elodie.b@example.com' }, root);
      expect(moved.status, moved.text).to.equal(200);
      expect((await signIn('elodie.b@example.com', 'stranger-password-1')).status).to.equal(303);
    } finally {
      await box.stop();
    }
  });
});
