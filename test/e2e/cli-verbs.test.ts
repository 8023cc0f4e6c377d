// kubectl's verbs on boxauth's records, run as a script would: create from a file, describe,
// edit through $EDITOR (a script that rewrites the file), -o json on changes (the record as
// written), delete; version -o json with the box's version; strict options against a real box.
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectPath } from '../../api/paths.js';
import { Box } from '../support/box.js';
import { runCli, type CliRun } from '../support/cli.js';
import { connectUpstream } from '../support/upstream.js';

describe('boxauth verbs: create, describe, edit, -o json on changes, version', function () {
  this.timeout(60_000);
  let box: Box;
  let env: NodeJS.ProcessEnv;
  let dir: string;

  before(async function () {
    box = await Box.start();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-verbs-'));
    env = { PATH: process.env.PATH, HOME: dir, BOXAUTH_URL: box.url, BOXAUTH_CLIENT_ID: 'root', BOXAUTH_CLIENT_SECRET: box.rootSecret };
  });
  after(async function () {
    await box?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const cli = (args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<CliRun> => runCli(args, { ...env, ...extraEnv });

  /** An $EDITOR that replaces `from` with `to` in the file it is given. */
  function editor(from: string, to: string): string {
    const file = path.join(dir, `edit-${from.replace(/\W/g, '')}.sh`);
    fs.writeFileSync(file, `#!/bin/sh\nsed -i 's/${from}/${to}/' "$1"\n`, { mode: 0o755 });
    return file;
  }

  it('client create -f makes a client and refuses it a second time; -o json prints the record as written', async function () {
    const file = path.join(dir, 'client.yaml');
    fs.writeFileSync(file, 'id: verbs-app\ngrant_types: [client_credentials]\nsecret: verbs-secret-123456\ndescription: first\n');
    const created = await cli(['client', 'create', '-f', file, '-o', 'json']);
    expect(created.code, created.stderr).to.equal(0);
    expect(JSON.parse(created.stdout)).to.include({ id: 'verbs-app', description: 'first' });
    const again = await cli(['client', 'create', '-f', file]);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.include('client/verbs-app');
    // The same file applied changes nothing: its secret is kept (test/e2e/cli.test.ts applies an edited one).
    const applied = await cli(['client', 'apply', '-f', file]);
    expect(applied.stdout).to.equal('client/verbs-app unchanged\n');
  });

  it('client edit opens $EDITOR on the YAML and puts back what was saved; unchanged changes nothing', async function () {
    const edited = await cli(['client', 'edit', 'verbs-app'], { EDITOR: editor('description: first', 'description: edited') });
    expect(edited.code, edited.stderr).to.equal(0);
    expect(edited.stdout).to.equal('client/verbs-app edited\n');
    expect(JSON.parse((await cli(['client', 'get', 'verbs-app'])).stdout).description).to.equal('edited');
    const unchanged = await cli(['client', 'edit', 'verbs-app'], { EDITOR: 'true' });
    expect(unchanged.stdout).to.include('unchanged');
    const failed = await cli(['client', 'edit', 'verbs-app'], { EDITOR: 'false' });
    expect(failed.code).to.equal(1);
    expect(failed.stderr).to.include('nothing changed');
  });

  it('describe prints a record in words, a user with their groups', async function () {
    expect((await cli(['group', 'new', 'verbs-team'])).code).to.equal(0);
    expect((await cli(['user', 'new', 'verbs@example.com:verbs-password-1', '--group', 'verbs-team'])).code).to.equal(0);
    const user = await cli(['user', 'describe', 'verbs@example.com']);
    expect(user.code, user.stderr).to.equal(0);
    expect(user.stdout).to.match(/^User verbs@example\.com\n/);
    expect(user.stdout).to.match(/^ {2}Groups: +verbs-team$/m);
    expect(user.stdout).to.match(/^ {2}Signed-in browsers: +none$/m);
    const client = await cli(['client', 'describe', 'verbs-app']);
    expect(client.stdout).to.match(/^Client verbs-app\n/);
    expect(client.stdout).to.match(/^ {2}Grant types: +client_credentials$/m);
    const group = await cli(['group', 'describe', 'verbs-team']);
    expect(group.stdout).to.include('verbs@example.com');
  });

  it('user edit and group edit put back the edited record; -o yaml prints it', async function () {
    const user = await cli(['user', 'edit', 'verbs@example.com', '-o', 'yaml'], { EDITOR: editor('active: true', 'active: false') });
    expect(user.code, user.stderr).to.equal(0);
    expect(user.stdout).to.match(/^active: false$/m);
    expect(user.stdout).not.to.include('argon2');
    const group = await cli(['group', 'edit', 'verbs-team'], { EDITOR: editor('description: null', 'description: Edited team') });
    expect(group.stdout).to.equal('group/verbs-team edited\n');
  });

  it('changes print the record with -o json and keep their line without it', async function () {
    const vouched = await cli(['user', 'vouch', 'verbs@example.com', '-o', 'json']);
    expect(JSON.parse(vouched.stdout)).to.include({ email: 'verbs@example.com', email_verified: true });
    expect(vouched.stdout).not.to.include('argon2');
    const deleted = await cli(['client', 'delete', 'verbs-app', '-o', 'json']);
    expect(JSON.parse(deleted.stdout)).to.include({ id: 'verbs-app' });
    const table = await cli(['user', 'disable', 'verbs@example.com', '-o', 'table']);
    expect(table.code).to.equal(2);
    const line = await cli(['user', 'delete', 'verbs@example.com']);
    expect(line.stdout).to.match(/^Deleted user verbs@example\.com/);
  });

  it('version -o json gives the client and the box versions; a wrong option is exit 2 naming it', async function () {
    const { version } = JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')) as { version: string };
    expect((await cli(['version'])).stdout).to.equal(`boxauth ${version}\n`);
    const json = JSON.parse((await cli(['version', '-o', 'json'])).stdout);
    expect(json).to.deep.equal({ clientVersion: { version }, serverVersion: { url: box.url, version } });
    const offline = JSON.parse((await cli(['version', '-o', 'json'], { BOXAUTH_URL: 'http://127.0.0.1:1' })).stdout);
    expect(offline).to.deep.equal({ clientVersion: { version } });
    const wrong = await cli(['user', 'list', '--group', 'eng']);
    expect(wrong.code).to.equal(2);
    expect(wrong.stdout).to.equal('');
    expect(wrong.stderr).to.include('--group does not apply to user list');
  });
  it('idp check tries a provider: a table of checks, exit 0 when all pass, exit 1 naming the check that failed', async function () {
    // The box is its own upstream provider here: a live issuer with a client whose secret it knows.
    await connectUpstream(box, box, 'itself', { disabled: true });
    const passed = await cli(['idp', 'check', 'itself', '-o', 'table']);
    expect(passed.code, passed.stderr).to.equal(0);
    expect(passed.stdout).to.match(/^CHECK\s+OK\s+DETAIL\n/);
    expect(passed.stdout).to.match(/client\s+true/);
    expect(passed.stdout).not.to.include('upstream-secret-itself');

    await box.json(
      'PUT',
      '/IdentityProvider/dead',
      { type: 'oidc', oidc: { issuer: 'http://127.0.0.1:9', clientId: 'x' }, disabled: true },
      await box.rootToken(),
    );
    const failed = await cli(['idp', 'check', 'dead', '-o', 'json']);
    expect(failed.code).to.equal(1);
    expect(JSON.parse(failed.stdout)[0]).to.include({ check: 'discovery', ok: false });
    expect(failed.stderr).to.include('dead: a check failed (discovery)');
    expect((await cli(['idp', 'check'])).code).to.equal(2);
  });
});
