// The boxauth CLI driven as a person would: through a pseudo-terminal for the
// wizard (util-linux `script` gives it a real tty), and as a script otherwise.
import argon2 from 'argon2';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectPath } from '../../api/paths.js';
import { Box } from '../support/box.js';

const CLI = projectPath('bin', 'boxauth.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('boxauth CLI', function () {
  let box: Box;
  let home: string;
  let env: NodeJS.ProcessEnv;

  before(async function () {
    box = await Box.start();
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-cli-'));
    env = { PATH: process.env.PATH, HOME: home };
  });
  after(async function () {
    await box?.stop();
  });

  function cli(args: string[], extraEnv: NodeJS.ProcessEnv = {}, input?: string): Promise<Run> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [CLI, ...args], { env: { ...env, ...extraEnv }, cwd: home });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => {
        stdout += d;
      });
      child.stderr.on('data', (d) => {
        stderr += d;
      });
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(input ?? '');
    });
  }

  it('box add / use / list keep the boxes in ~/.config/boxauth/config.json, mode 0600', async function () {
    const add = await cli(['box', 'add', 'test', box.url, '--client-id', 'root', '--client-secret', box.rootSecret]);
    expect(add.code, add.stderr).to.equal(0);
    const file = path.join(home, '.config', 'boxauth', 'config.json');
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).current).to.equal('test');
    await cli(['box', 'add', 'other', 'http://127.0.0.1:1', '--client-id', 'x', '--client-secret', 'y']);
    const list = await cli(['box', 'list']);
    expect(list.stdout).to.match(/\* other/);
    expect(list.stdout).not.to.include(box.rootSecret);
    expect((await cli(['box', 'use', 'test'])).code).to.equal(0);
    expect((await cli(['box', 'list'])).stdout).to.match(/\* test/);
  });

  it('user help lists the subcommands; --help works on every command', async function () {
    const help = await cli(['user', 'help']);
    expect(help.code).to.equal(0);
    for (const sub of ['user list', 'user new', 'user new <email>:<password>']) expect(help.stdout).to.include(sub);
    for (const command of ['user', 'group', 'client', 'policy', 'session', 'box']) {
      const res = await cli([command, '--help']);
      expect(res.code, command).to.equal(0);
      expect(res.stdout).to.match(/^Usage: boxauth/);
    }
  });

  it('user new <email>:<password> creates inline (the password may contain ":") and names the user and the box', async function () {
    const res = await cli(['user', 'new', 'inline@example.com:pa:ss:word']);
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stdout).to.match(/Created user inline@example\.com \(id \d+, email verified\) in box "default"/);
    const token = await box.rootToken();
    const { id } = (await box.json('GET', `/users?email=inline@example.com&access_token=${token}`)).body[0];
    const { password } = (await box.json('GET', `/users/${id}`, undefined, token)).body;
    // The password is everything after the first colon.
    expect(await argon2.verify(password, 'pa:ss:word')).to.equal(true);
  });

  it('user new without arguments is a wizard: Email and Password prompts, the password not echoed', async function () {
    const transcript = await new Promise<{ out: string; code: number | null }>((resolve) => {
      // `script` runs the CLI on a pseudo-terminal; what we write is what a person types.
      const child = spawn('script', ['-qfec', `${process.execPath} ${CLI} user new`, '/dev/null'], { env, cwd: home });
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.endsWith('Email: ')) child.stdin.write('wizard@example.com\r');
        if (out.endsWith('Password: ')) child.stdin.write('wizard-secret-pw\r');
      });
      child.on('close', (code) => resolve({ out, code }));
    });
    expect(transcript.code, transcript.out).to.equal(0);
    expect(transcript.out).to.include('Email: wizard@example.com');
    expect(transcript.out).to.include('Password: ');
    expect(transcript.out).not.to.include('wizard-secret-pw');
    expect(transcript.out).to.match(/Created user wizard@example\.com \(id \d+, email verified\) in box "default"/);
  });

  it('user list prints the users as raw JSON', async function () {
    const res = await cli(['user', 'list']);
    expect(res.code).to.equal(0);
    const users = JSON.parse(res.stdout);
    expect(users).to.be.an('array');
    expect(users.map((u: any) => u.email)).to.include.members(['inline@example.com', 'wizard@example.com']);
    for (const u of users) expect(u).not.to.have.property('password');
    expect(users.find((u: any) => u.email === 'inline@example.com').email_verified).to.equal(true);
  });

  it("errors are one line on stderr with the server's 422 messages, and a non-zero exit", async function () {
    const taken = await cli(['user', 'new', 'inline@example.com:another-password']);
    expect(taken.code).to.equal(1);
    expect(taken.stderr.trim().split('\n')).to.have.length(1);
    expect(taken.stderr).to.include('email: email is already taken');
    const bad = await cli(['user', 'new', 'nobody:short']);
    expect(bad.stderr).to.include('is not a valid email address');
    expect(bad.stderr).to.include('password: must be at least 8 characters');
    const usage = await cli(['user', 'new', 'no-colon-here']);
    expect(usage.code).to.equal(2);
    const unknown = await cli(['user', 'frobnicate']);
    expect(unknown.code).to.equal(2);
    const down = await cli(['user', 'list'], { BOXAUTH_URL: 'http://127.0.0.1:9' });
    expect(down.code).to.equal(1);
    expect(down.stderr).to.match(/cannot reach the box at http:\/\/127\.0\.0\.1:9/);
    const wrong = await cli(['user', 'list'], { BOXAUTH_CLIENT_SECRET: 'wrong-secret' });
    expect(wrong.code).to.equal(1);
    expect(wrong.stderr).to.match(/cannot sign in/);
  });

  it('group new / list, client and policy apply -f (several YAML documents), session list / close', async function () {
    expect((await cli(['group', 'new', 'support', '--description', 'Helps people'])).code).to.equal(0);
    expect(JSON.parse((await cli(['group', 'list'])).stdout).map((g: any) => g.name)).to.include('support');
    const manifest = path.join(home, 'clients.yaml');
    fs.writeFileSync(
      manifest,
      [
        'resourceType: Client\nid: cli-a\ngrant_types: [client_credentials]\nsecret: cli-a-secret\n',
        'apiVersion: boxauth.io/v1alpha1\nkind: Client\nmetadata: {name: cli-b}\nspec:\n  grant_types: [implicit]\n  scope: [profile]\n  auth: {implicit: {redirect_uri: "https://b.example/cb"}}\n',
      ].join('---\n'),
    );
    const applied = await cli(['client', 'apply', '-f', manifest]);
    expect(applied.code, applied.stderr).to.equal(0);
    expect(applied.stdout).to.equal('client/cli-a created\nclient/cli-b created\n');
    expect((await cli(['client', 'apply', '-f', manifest])).stdout).to.equal('client/cli-a configured\nclient/cli-b configured\n');
    const policy = await cli(
      ['policy', 'apply', '-f', '-'],
      {},
      '{"id": "cli-a", "engine": "allow", "link": [{"id": "cli-a", "resourceType": "Client"}]}',
    );
    expect(policy.stdout).to.equal('policy/cli-a created\n');
    const invalid = await cli(['policy', 'apply', '-f', '-'], {}, 'id: broken\nengine: nope\n');
    expect(invalid.code).to.equal(1);
    expect(invalid.stderr).to.include('policy/broken: engine: must be one of');
    const clients = JSON.parse((await cli(['client', 'list'])).stdout).map((c: any) => c.id);
    expect(clients).to.include.members(['cli-a', 'cli-b']);
    expect(JSON.parse((await cli(['client', 'get', 'cli-b'])).stdout).scope).to.deep.equal(['profile']);
    // The audience allow-list, from stdin like any other field: a token beyond it is refused.
    const limited = await cli(
      ['client', 'apply', '-f', '-'],
      {},
      'id: cli-a\ngrant_types: [client_credentials]\naudience: ["https://orders.example"]\n',
    );
    expect(limited.stdout).to.equal('client/cli-a configured\n');
    const beyond = await box.form('/auth/token', {
      grant_type: 'client_credentials',
      client_id: 'cli-a',
      client_secret: 'cli-a-secret',
      audience: 'https://payments.example',
    });
    expect(beyond.body.error).to.equal('invalid_target');

    const token = (await box.form('/auth/token', { grant_type: 'client_credentials', client_id: 'cli-a', client_secret: 'cli-a-secret' }))
      .body.access_token;
    const sessions = JSON.parse((await cli(['session', 'list', '--client', 'cli-a', '--active'])).stdout);
    expect(sessions).to.have.length(1);
    expect((await box.json('GET', '/Client/cli-a', undefined, token)).status).to.equal(200);
    expect((await cli(['session', 'close', sessions[0].id])).code).to.equal(0);
    expect((await box.json('GET', '/Client/cli-a', undefined, token)).status).to.equal(401);
  });

  it('BOXAUTH_URL, BOXAUTH_CLIENT_ID and BOXAUTH_CLIENT_SECRET work without any config file', async function () {
    const res = await cli(['group', 'list'], {
      HOME: fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-empty-')),
      BOXAUTH_URL: box.url,
      BOXAUTH_CLIENT_ID: 'root',
      BOXAUTH_CLIENT_SECRET: box.rootSecret,
    });
    expect(res.code, res.stderr).to.equal(0);
    expect(JSON.parse(res.stdout)).to.be.an('array');
  });
});
