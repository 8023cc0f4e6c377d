// The boxauth CLI's commands for people that the admin console has too (issue 51): turning a
// person off and on, a group's members, a person's linked identities, and --version; driven as a
// script drives them (stdout a pipe: JSON unless --output says otherwise), each change checked
// through the REST API or the person's own browser. Names that hold terminal escapes are printed
// escaped, never sent.
import argon2 from 'argon2';
import { expect } from 'chai';
import fs from 'node:fs';
import pg from 'pg';
import { projectPath } from '../../api/paths.js';
import { Box } from '../support/box.js';
import { runCli, type CliRun } from '../support/cli.js';
import { FormAgent } from '../support/form-agent.js';
import { linkDummyIdentity } from '../support/identities.js';

const PASSWORD = 'people-password-1';
/** A byte a terminal acts on (ESC, BEL, the C1 controls) or a bidi control: what no output may hold raw. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('boxauth CLI: people as the console shows them', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
  });
  after(async function () {
    await box?.stop();
  });

  const cli = (args: string[], input?: string): Promise<CliRun> =>
    runCli(args, { PATH: process.env.PATH, BOXAUTH_URL: box.url, BOXAUTH_CLIENT_ID: 'root', BOXAUTH_CLIENT_SECRET: box.rootSecret }, input);
  const api = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await box.json(method, path, body, root);
    expect(res.status, res.text).to.be.oneOf([200, 201, 204]);
    return res.body;
  };
  const person = async (email: string): Promise<{ id: number; email: string }> => api('POST', '/users', { email, password: PASSWORD });

  it('--version prints the package version; --help names it', async function () {
    const { version } = JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const run = await cli([flag]);
      expect(run.code, run.stderr).to.equal(0);
      expect(run.stdout).to.equal(`boxauth ${version}\n`);
    }
    const help = await cli(['--help']);
    expect(help.stdout)
      .to.match(/^Usage: boxauth <command>/)
      .and.include('-V, --version');
    const userHelp = (await cli(['user', 'help'])).stdout;
    for (const sub of [
      'user disable <id|email>',
      'user enable <id|email>',
      'user identities <id|email>',
      'user unlink <id|email> <provider>',
    ])
      expect(userHelp).to.include(sub);
    const groupHelp = (await cli(['group', '--help'])).stdout;
    for (const sub of [
      'group members <id|name>',
      'group add-member <id|name> <id|email>...',
      'group remove-member <id|name> <id|email>...',
    ])
      expect(groupHelp).to.include(sub);
  });

  it('user disable signs the person out and keeps them out; user enable lets them sign in again; user list says ACTIVE', async function () {
    const dee = await person('dee@example.com');
    const browser = new FormAgent(box);
    expect((await browser.signIn(dee.email, PASSWORD, '/auth/account')).status).to.equal(303);
    expect((await browser.get('/auth/account')).status).to.equal(200);

    const off = await cli(['user', 'disable', 'DEE@example.com']);
    expect(off.code, off.stderr).to.equal(0);
    expect(off.stdout).to.match(/^Turned dee@example\.com \(id \d+\) off in box "default": they cannot sign in, /);
    expect((await browser.get('/auth/account')).status, 'the browser is signed out').to.equal(303);
    expect((await new FormAgent(box).signIn(dee.email, PASSWORD)).status, 'and cannot sign in').not.to.equal(303);
    expect((await api('GET', `/users/${dee.id}`)).active).to.equal(false);
    const table = (await cli(['user', 'list', '-o', 'table'])).stdout.split('\n');
    expect(table[0]).to.match(/^ID +EMAIL +EMAIL_VERIFIED +ACTIVE +GROUPS$/);
    expect(table.find((l) => l.includes('dee@example.com'))).to.match(/^\d+ +dee@example\.com +true +false$/);

    const on = await cli(['user', 'enable', String(dee.id)]);
    expect(on.code, on.stderr).to.equal(0);
    expect(on.stdout).to.match(/^Turned dee@example\.com \(id \d+\) on in box "default": they may sign in again\.\n$/);
    expect((await new FormAgent(box).signIn(dee.email, PASSWORD)).status).to.equal(303);
    expect((await cli(['user', 'disable'])).code, 'no user named').to.equal(2);
  });

  it('group members lists them; add-member and remove-member take people by email or id; a name that names nobody changes nothing', async function () {
    const ops = await api('POST', '/groups', { name: 'ops' });
    const [eve, fay] = [await person('eve@example.com'), await person('fay@example.com')];
    const add = await cli(['group', 'add-member', 'ops', 'EVE@example.com', String(fay.id)]);
    expect(add.code, add.stderr).to.equal(0);
    expect(add.stdout).to.equal('eve@example.com is now in ops.\nfay@example.com is now in ops.\n');
    expect((await api('GET', `/users/${eve.id}`)).groups.map((g: any) => g.name)).to.deep.equal(['ops']);
    const members = JSON.parse((await cli(['group', 'members', 'ops'])).stdout);
    expect(members.map((m: any) => m.email).sort()).to.deep.equal(['eve@example.com', 'fay@example.com']);
    expect((await cli(['group', 'members', String(ops.id), '-o', 'table'])).stdout).to.match(
      /^ID +EMAIL +ACTIVE\n\d+ +eve@example\.com +true\n/,
    );

    const unknown = await cli(['group', 'remove-member', 'ops', 'eve@example.com', 'nobody@example.com']);
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr.trim().split('\n')).to.have.length(1);
    expect((await api('GET', `/users/${eve.id}`))['group-ids']).to.deep.equal([ops.id]);

    const removed = await cli(['group', 'remove-member', 'ops', 'eve@example.com']);
    expect(removed.code, removed.stderr).to.equal(0);
    expect(removed.stdout).to.equal('eve@example.com is now in no group.\n');
    expect((await api('GET', `/users/${eve.id}`))['group-ids']).to.deep.equal([]);
    expect(JSON.parse((await cli(['group', 'members', 'ops'])).stdout).map((m: any) => m.email)).to.deep.equal(['fay@example.com']);
    expect((await cli(['group', 'members', 'no-such-group'])).code).to.equal(1);
  });

  it("user identities lists the person's linked identities; user unlink unlinks one (404 the second time)", async function () {
    await api('PUT', '/IdentityProvider/corp', { type: 'oidc', oidc: { issuer: 'https://sso.corp.example', clientId: 'boxauth' } });
    const gil = await person('gil@example.com');
    await linkDummyIdentity(box.databaseUrl!, gil.id, 'corp', 'corp-subject-1', 'gil@corp.example');
    const listed = JSON.parse((await cli(['user', 'identities', 'gil@example.com'])).stdout);
    expect(listed).to.have.length(1);
    expect(listed[0]).to.include({ provider: 'corp', subject: 'corp-subject-1', email: 'gil@corp.example' });
    const table = (await cli(['user', 'identities', 'gil@example.com', '-o', 'table'])).stdout.split('\n');
    expect(table[0]).to.match(/^PROVIDER +SUBJECT +EMAIL +LINKED_AT +LAST_USED_AT$/);
    expect(table[1]).to.match(/^corp +corp-subject-1 +gil@corp\.example +\d{4}-/);

    const unlinked = await cli(['user', 'unlink', 'gil@example.com', 'corp']);
    expect(unlinked.code, unlinked.stderr).to.equal(0);
    expect(unlinked.stdout).to.equal(`Unlinked gil@example.com (id ${gil.id}) from corp: that identity no longer signs them in.\n`);
    expect(await api('GET', `/users/${gil.id}/identities`)).to.deep.equal([]);
    const again = await cli(['user', 'unlink', 'gil@example.com', 'corp']);
    expect(again.code).to.equal(1);
    expect(again.stderr.trim().split('\n')).to.have.length(1);
    expect((await cli(['user', 'unlink', 'gil@example.com'])).code).to.equal(2);
  });

  it('a person, a group and an identity whose names hold terminal escapes are printed escaped by every new command', async function () {
    // Names the box refuses now, as rows from before it did (or written by SQL): the CLI trusts no server string.
    const email = 'mal\u001b]0;pwned\u0007\u001b[2J@example.com';
    const group = 'crew\u001b[2J\u202e';
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    let userId: number;
    let groupId: number;
    try {
      const hash = await argon2.hash(PASSWORD, { type: argon2.argon2id });
      userId = (await db.query('INSERT INTO users (email, password_hash) VALUES ($1, $2) RETURNING id', [email, hash])).rows[0].id;
      groupId = (await db.query('INSERT INTO groups (name) VALUES ($1) RETURNING id', [group])).rows[0].id;
    } finally {
      await db.end();
    }
    await linkDummyIdentity(box.databaseUrl!, userId, 'corp', 'sub\u001b]0;x\u0007', 'id\u001b[2J@corp.example');
    const runs = {
      'add-member': await cli(['group', 'add-member', String(groupId), String(userId)]),
      members: await cli(['group', 'members', String(groupId), '-o', 'table']),
      identities: await cli(['user', 'identities', String(userId), '-o', 'table']),
      unlink: await cli(['user', 'unlink', String(userId), 'corp']),
      disable: await cli(['user', 'disable', String(userId)]),
      list: await cli(['user', 'list', '-o', 'table']),
      enable: await cli(['user', 'enable', String(userId)]),
      'remove-member': await cli(['group', 'remove-member', String(groupId), String(userId)]),
    };
    for (const [what, run] of Object.entries(runs)) {
      expect(run.code, `${what}: ${run.stderr}`).to.equal(0);
      expect(run.stdout, what).not.to.match(RAW_CONTROL);
      expect(run.stderr, what).not.to.match(RAW_CONTROL);
    }
    const shownEmail = 'mal\\u001b]0;pwned\\u0007\\u001b[2J@example.com';
    expect(runs['add-member'].stdout).to.equal(`${shownEmail} is now in crew\\u001b[2J\\u202e.\n`);
    expect(runs.members.stdout).to.include(shownEmail);
    expect(runs.identities.stdout).to.include('sub\\u001b]0;x\\u0007').and.include('id\\u001b[2J@corp.example');
    expect(runs.disable.stdout).to.include(`Turned ${shownEmail} (id ${userId}) off`);
  });
});
