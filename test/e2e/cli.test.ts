// The boxauth CLI driven as a person would: through a pseudo-terminal for the
// wizard (util-linux `script` gives it a real tty), and as a script otherwise.
import argon2 from 'argon2';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import pg from 'pg';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { projectPath } from '../../api/paths.js';
import { providerSecret } from '../../api/people/upstream/secret.js';
import { addDummyPasskey } from '../support/factors.js';
import { Box, basic, eventually } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { freePort } from '../support/ports.js';

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

  function cli(args: string[], extraEnv: NodeJS.ProcessEnv = {}, input?: string, cwd = home): Promise<Run> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [CLI, ...args], { env: { ...env, ...extraEnv }, cwd });
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

  /**
   * The CLI on a pseudo-terminal (util-linux `script` gives it a real tty, for stdin and stdout):
   * each prompt, once it shows, is answered as a person types.
   */
  function onTerminal(args: string[], answers: [prompt: string, reply: string][] = []): Promise<{ out: string; code: number | null }> {
    const quoted = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    return new Promise((resolve) => {
      const child = spawn('script', ['-qfec', quoted, '/dev/null'], { env, cwd: home });
      let out = '';
      let next = 0;
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const answer = answers[next];
        if (answer && out.endsWith(answer[0])) {
          next++;
          child.stdin.write(`${answer[1]}\r`);
        }
      });
      child.on('close', (code) => resolve({ out, code }));
    });
  }

  const configFile = () => path.join(home, '.config', 'boxauth', 'config.json');

  it('box add / use / list keep the boxes in ~/.config/boxauth/config.json, mode 0600', async function () {
    const add = await cli(['box', 'add', 'test', box.url, '--client-id', 'root', '--client-secret', box.rootSecret]);
    expect(add.code, add.stderr).to.equal(0);
    const file = path.join(home, '.config', 'boxauth', 'config.json');
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).current).to.equal('test');
    const offline = await cli(['box', 'add', 'other', 'http://127.0.0.1:1', '--no-check', '--client-id', 'x', '--client-secret', 'y']);
    expect(offline.code, offline.stderr).to.equal(0);
    const list = await cli(['box', 'list', '--output', 'table']);
    expect(list.stdout).to.match(/^\* +other +http:\/\/127\.0\.0\.1:1 +x$/m);
    expect(list.stdout).not.to.include(box.rootSecret);
    expect((await cli(['box', 'use', 'test'])).code).to.equal(0);
    expect((await cli(['box', 'list', '-o', 'table'])).stdout).to.match(/^\* +test /m);
    const listed = JSON.parse((await cli(['box', 'list'])).stdout);
    expect(listed).to.deep.include({ name: 'test', url: box.url, client_id: 'root', current: true });
    expect(JSON.stringify(listed)).not.to.include(box.rootSecret);
  });

  it('box add asks the URL for its discovery document first: a dead or foreign URL is refused and nothing is saved', async function () {
    const saved = fs.readFileSync(configFile(), 'utf8');
    const deadUrl = `http://127.0.0.1:${await freePort()}`;
    const dead = await cli(['box', 'add', 'dead', deadUrl, '--client-id', 'x', '--client-secret', 'y']);
    expect(dead.code).to.equal(1);
    expect(dead.stderr.trim().split('\n')).to.have.length(1);
    expect(dead.stderr).to.include(`cannot reach ${deadUrl} (ECONNREFUSED); nothing saved (--no-check saves it without asking the box)`);
    // Not a box: a web server that answers every path with a page.
    const site = http.createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end('<h1>Welcome</h1>'));
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    const siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    try {
      const foreign = await cli(['box', 'add', 'foreign', siteUrl, '--client-id', 'x', '--client-secret', 'y']);
      expect(foreign.code).to.equal(1);
      expect(foreign.stderr).to.include(
        `${siteUrl} is not a box: ${siteUrl}/.well-known/oauth-authorization-server names no issuer; nothing saved`,
      );
    } finally {
      site.close();
    }
    // A box, under a name that is not its issuer: its tokens would not be for this URL.
    const alias = box.url.replace('127.0.0.1', 'localhost');
    const renamed = await cli(['box', 'add', 'alias', alias, '--client-id', 'root', '--client-secret', box.rootSecret]);
    expect(renamed.code).to.equal(1);
    expect(renamed.stderr).to.include(`the box at ${alias} calls itself ${box.url}: add it as ${box.url}; nothing saved`);
    expect(fs.readFileSync(configFile(), 'utf8')).to.equal(saved);
    const bad = await cli(['box', 'add', 'ftp', 'ftp://example.com', '--client-id', 'x', '--client-secret', 'y']);
    expect(bad.code).to.equal(2);
  });

  it('box list shows the box of `make run` as "local (default)" when no box is configured, and commands use it', async function () {
    const project = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-project-'));
    fs.mkdirSync(path.join(project, '.boxauth'));
    fs.writeFileSync(
      path.join(project, '.boxauth', 'root-client.json'),
      JSON.stringify({ client_id: 'root', client_secret: box.rootSecret, base_url: box.url }),
    );
    const fresh = { HOME: fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-fresh-')) };
    const list = await cli(['box', 'list', '-o', 'table'], fresh, undefined, project);
    expect(list.code, list.stderr).to.equal(0);
    expect(list.stdout).to.match(new RegExp(`^\\* +local \\(default\\) +${box.url.replace(/\./g, '\\.')} +root$`, 'm'));
    expect((await cli(['group', 'list'], fresh, undefined, project)).code).to.equal(0);
    // Once a box is current, local is listed, not current.
    expect(
      (await cli(['box', 'add', 'mine', box.url, '--client-id', 'root', '--client-secret', box.rootSecret], fresh, undefined, project))
        .code,
    ).to.equal(0);
    const after = (await cli(['box', 'list', '-o', 'table'], fresh, undefined, project)).stdout;
    expect(after).to.match(/^\* +mine /m);
    expect(after).to.match(/^  +local \(default\) /m);
    // Nowhere to talk to: the listing says how to get a box.
    const none = await cli(['box', 'list'], fresh);
    expect(none.stdout).to.include('mine');
    const nothing = await cli(['box', 'list'], { HOME: fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-none-')) });
    expect(nothing.code).to.equal(0);
    expect(nothing.stderr).to.match(/No boxes yet: .*make run.*boxauth box add/);
  });

  it('user help lists the subcommands; --help works on every command and names its options', async function () {
    const help = await cli(['user', 'help']);
    expect(help.code).to.equal(0);
    for (const sub of [
      'user list',
      'user new',
      'user new <email>:<password>',
      'user set-password <id|email>',
      '--password-stdin',
      '--group <name|id>',
      'user add-to-group',
      'user remove-from-group',
      'user set-groups',
    ])
      expect(help.stdout).to.include(sub);
    for (const command of ['user', 'group', 'client', 'policy', 'idp', 'session', 'box']) {
      const res = await cli([command, '--help']);
      expect(res.code, command).to.equal(0);
      expect(res.stdout).to.match(/^Usage: boxauth/);
      expect(res.stdout, command).to.include('--output table|json|yaml');
    }
    expect((await cli(['box', '--help'])).stdout).to.include('--no-check');
  });

  it('user new <email>:<password> creates inline (the password may contain ":") and names the user and the box', async function () {
    const res = await cli(['user', 'new', 'inline@example.com:tr:ou:ba:dor-7']);
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stdout).to.match(/Created user inline@example\.com \(id \d+, email verified\) in box "default"/);
    // The password is everything after the first colon.
    expect((await new FormAgent(box).signIn('inline@example.com', 'tr:ou:ba:dor-7')).status).to.equal(303);
  });

  it('user new without arguments is a wizard: Email and Password prompts, the password not echoed', async function () {
    const transcript = await onTerminal(
      ['user', 'new'],
      [
        ['Email: ', 'wizard@example.com'],
        ['Password: ', 'wizard-secret-pw'],
      ],
    );
    expect(transcript.code, transcript.out).to.equal(0);
    expect(transcript.out).to.include('Email: wizard@example.com');
    expect(transcript.out).to.include('Password: ');
    expect(transcript.out).not.to.include('wizard-secret-pw');
    expect(transcript.out).to.match(/Created user wizard@example\.com \(id \d+, email verified\) in box "default"/);
  });

  it('user get prints no password hash, in any format; a user is named by id or email', async function () {
    const token = await box.rootToken();
    const { id } = (await box.json('GET', `/users?email=inline@example.com&access_token=${token}`)).body[0];
    const got = await cli(['user', 'get', String(id)]);
    expect(got.code, got.stderr).to.equal(0);
    expect(got.stdout).not.to.include('$argon2');
    expect(JSON.parse(got.stdout)).to.include({ id, email: 'inline@example.com' }).and.not.to.have.property('password');
    for (const output of ['json', 'yaml', 'table']) {
      const shown = await cli(['user', 'get', 'inline@example.com', '-o', output]);
      expect(shown.code, shown.stderr).to.equal(0);
      expect(shown.stdout, output).not.to.match(/argon2|password/i);
    }
    // The flag that printed it is gone.
    expect((await cli(['user', 'get', 'inline@example.com', '--show-password-hash'])).code).to.equal(2);
    const missing = await cli(['user', 'get', 'nobody@example.com']);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.include('no user with email nobody@example.com');
  });

  it('user set-password asks twice without echo, or reads --password-stdin, and says the sessions ended', async function () {
    const email = 'inline@example.com';
    const signIn = async (password: string) => (await new FormAgent(box).signIn(email, password)).status;
    expect(await signIn('tr:ou:ba:dor-7')).to.equal(303);
    const typed = await onTerminal(
      ['user', 'set-password', email],
      [
        ['New password: ', 'second-password-1'],
        ['Again: ', 'second-password-1'],
      ],
    );
    expect(typed.code, typed.out).to.equal(0);
    expect(typed.out).not.to.include('second-password-1');
    expect(typed.out).to.match(/Password of inline@example\.com \(id \d+\) changed in box "default"/);
    expect(typed.out).to.match(/their signed-in browsers, codes and tokens were ended/);
    expect(await signIn('tr:ou:ba:dor-7')).not.to.equal(303);
    expect(await signIn('second-password-1')).to.equal(303);

    const differ = await onTerminal(
      ['user', 'set-password', email],
      [
        ['New password: ', 'third-password-1'],
        ['Again: ', 'third-password-2'],
      ],
    );
    expect(differ.code).to.equal(2);
    expect(differ.out).to.include('the passwords differ; nothing changed');
    expect(await signIn('second-password-1')).to.equal(303);

    const piped = await cli(['user', 'set-password', email, '--password-stdin'], {}, 'third-password-1\n');
    expect(piped.code, piped.stderr).to.equal(0);
    expect(piped.stdout).to.match(/Password of inline@example\.com .* changed/);
    expect(await signIn('third-password-1')).to.equal(303);
    const short = await cli(['user', 'set-password', email, '--password-stdin'], {}, 'short\n');
    expect(short.code).to.equal(1);
    expect(short.stderr).to.include('password: is too short: at least 8 characters');
    expect((await cli(['user', 'set-password'])).code).to.equal(2);
  });

  it("a password the box's rule refuses: one line with the box's reason, exit 1, and nothing changes", async function () {
    const made = await cli(['user', 'new', 'weak@example.com:Password1']);
    expect(made.code).to.equal(1);
    expect(made.stderr).to.equal('boxauth user: password: is one of the most used passwords: choose another\n');
    const token = await box.rootToken();
    expect((await box.json('GET', `/users?email=weak@example.com&access_token=${token}`)).body).to.deep.equal([]);

    const email = 'inline@example.com';
    const set = await cli(['user', 'set-password', email, '--password-stdin'], {}, '12345678\n');
    expect(set.code).to.equal(1);
    expect(set.stderr).to.equal('boxauth user: password: is one of the most used passwords: choose another\n');
    const like = await cli(['user', 'set-password', email, '--password-stdin'], {}, 'inline-2024\n');
    expect(like.stderr).to.include('password: is too much like the email address: choose another');
    expect((await new FormAgent(box).signIn(email, 'third-password-1')).status, 'the old password still signs in').to.equal(303);
  });

  it('user list, piped, prints the users as JSON', async function () {
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
    expect(bad.stderr).to.include('password: is too short: at least 8 characters');
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
    expect((await cli(['client', 'apply', '-f', manifest])).stdout).to.equal('client/cli-a unchanged\nclient/cli-b unchanged\n');
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

  it('a Client manifest with token exchange, DPoP and PAR settings: applied, shown, and the box acts on them', async function () {
    const manifest = [
      'apiVersion: boxauth.io/v1alpha1\nkind: Client\nmetadata: {name: cli-svc}\nspec:',
      '  grant_types: [client_credentials, "urn:ietf:params:oauth:grant-type:token-exchange"]',
      '  dpop_bound_access_tokens: true',
      '  auth: {token_exchange: {token_format: jwt, access_token_expiration: 300}}',
      '---',
      'apiVersion: boxauth.io/v1alpha1\nkind: Client\nmetadata: {name: cli-web}\nspec:',
      '  grant_types: [authorization_code]',
      '  require_pushed_authorization_requests: true',
      '  auth: {authorization_code: {redirect_uri: "https://web.example/cb"}}',
      '',
    ].join('\n');
    const applied = await cli(['client', 'apply', '-f', '-'], {}, manifest);
    expect(applied.code, applied.stderr).to.equal(0);
    const secret = /generated secret \(shown once, keep it\): (\S+)/.exec(applied.stdout)![1]!;
    const svc = JSON.parse((await cli(['client', 'get', 'cli-svc'])).stdout);
    expect(svc).to.include({ dpop_bound_access_tokens: true });
    expect(svc.grant_types).to.include('urn:ietf:params:oauth:grant-type:token-exchange');
    expect(svc.auth.token_exchange).to.deep.equal({ token_format: 'jwt', access_token_expiration: 300 });
    expect(JSON.parse((await cli(['client', 'get', 'cli-web'])).stdout)).to.include({ require_pushed_authorization_requests: true });
    // The box holds them to it: no token without a DPoP proof, no authorization request that was not pushed.
    const unproven = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('cli-svc', secret) });
    expect(unproven.body.error).to.equal('invalid_dpop_proof');
    const unpushed = await box.request(
      'GET',
      `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'cli-web', redirect_uri: 'https://web.example/cb' })}`,
    );
    expect(unpushed.headers.get('location') ?? '').to.include('error=invalid_request');
  });

  it("applies the repository's examples as they are: Kubernetes manifests, their Secrets read, other kinds skipped and said so", async function () {
    const example = (file: string): string => projectPath('examples', file);
    const clients = await cli(['client', 'apply', '-f', example('client.yaml')]);
    expect(clients.code, clients.stderr).to.equal(0);
    expect(clients.stdout).to.match(
      /^client\/orders (created|configured)\n {2}generated secret \(shown once, keep it\): ([A-Za-z0-9_-]{43})\n/,
    );
    expect(clients.stdout).to.include('client/billing ');
    expect(clients.stderr).to.include('skipped Secret billing-credentials (read for the clients that name it)');
    // Each works with the secret it was given: generated and shown, or the one of its Secret in the file.
    const generated = /generated secret \(shown once, keep it\): (\S+)/.exec(clients.stdout)![1]!;
    expect(
      (await box.form('/auth/token', { grant_type: 'client_credentials', client_id: 'orders', client_secret: generated })).status,
    ).to.equal(200);
    const billing = await box.form('/auth/token', {
      grant_type: 'client_credentials',
      client_id: 'billing',
      client_secret: 'change-me-billing-secret',
    });
    expect(billing.status, billing.text).to.equal(200);
    for (const [command, file] of [
      ['policy', 'accesspolicy.yaml'],
      ['client', 'browser-app/client.yaml'],
      ['client', 'workload/client.yaml'],
    ] as const) {
      const applied = await cli([command, 'apply', '-f', example(file)]);
      expect(applied.code, `${file}: ${applied.stderr}`).to.equal(0);
    }
    // The list docs/getting-started.md says to add a callback to.
    const app = await box.json('GET', '/Client/example-app', undefined, await box.rootToken());
    expect(app.body.auth.authorization_code.redirect_uris).to.deep.equal(['http://localhost:3000/callback.html']);
    const box_ = await cli(['client', 'apply', '-f', example('box.yaml')]);
    expect(box_.code).to.equal(2); // the file's fault, not the box's (docs/reference/cli.md)
    expect(box_.stderr).to.include('skipped Box auth (not a Client)').and.include('no Client in it');
  });

  it('the same manifests applied again change nothing: every record "unchanged", no new secret, the first one still works', async function () {
    // As GitOps does all day, on a box of its own: BOXAUTH_URL and the root client, no config file.
    const fresh = await Box.start();
    try {
      const asRoot = { HOME: fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-again-')), BOXAUTH_URL: fresh.url, BOXAUTH_CLIENT_ID: 'root' };
      const apply = (command: string, file: string): Promise<Run> =>
        cli([command, 'apply', '-f', projectPath('examples', file)], { ...asRoot, BOXAUTH_CLIENT_SECRET: fresh.rootSecret });
      const files = [
        ['client', 'client.yaml'],
        ['app', 'app.yaml'],
        ['policy', 'app.yaml'],
        ['policy', 'accesspolicy.yaml'],
        ['idp', 'identityprovider.yaml'],
        ['webhook', 'webhook.yaml'],
        ['hook', 'hook.yaml'],
      ] as const;
      const first: Run[] = [];
      for (const [command, file] of files) first.push(await apply(command, file));
      for (const run of first) expect(run.code, run.stderr).to.equal(0);
      const generated = /generated secret \(shown once, keep it\): (\S+)/.exec(first[0]!.stdout)![1]!;
      const root = await fresh.rootToken();
      const trail = async (): Promise<unknown[]> =>
        (await fresh.json('GET', '/AuditEvent?event=record_changed&_count=1000', undefined, root)).body;
      const changes = await trail();

      for (const [i, [command, file]] of files.entries()) {
        const again = await apply(command, file);
        expect(again.code, again.stderr).to.equal(0);
        const lines = again.stdout.trim().split('\n');
        expect(lines, `${command} apply -f ${file}`).to.have.length(
          first[i]!.stdout.trim()
            .split('\n')
            .filter((l) => !l.startsWith(' ')).length,
        );
        for (const line of lines) expect(line, `${command} apply -f ${file}`).to.match(/^[a-z]+\/\S+ unchanged$/);
      }
      expect(await trail(), 'no record_changed event').to.deep.equal(changes);
      const token = await fresh.form('/auth/token', { grant_type: 'client_credentials', client_id: 'orders', client_secret: generated });
      expect(token.status, token.text).to.equal(200);
      // What changed is still "configured", and the secret the first apply generated stays.
      const edited = fs.readFileSync(projectPath('examples', 'client.yaml'), 'utf8').replace('description: ', 'description: Now ');
      const changed = await cli(['client', 'apply', '-f', '-'], { ...asRoot, BOXAUTH_CLIENT_SECRET: fresh.rootSecret }, edited);
      expect(changed.stdout)
        .to.match(/^client\/orders configured\n/)
        .and.not.include('generated secret');
      const still = await fresh.form('/auth/token', { grant_type: 'client_credentials', client_id: 'orders', client_secret: generated });
      expect(still.status, still.text).to.equal(200);
      // A users file with a password: applied again, the person's password (and so their sessions) stays.
      const users = 'email: gitops@example.com\npassword: a-gitops-password\n';
      const applyUsers = (): Promise<Run> =>
        cli(['user', 'apply', '-f', '-'], { ...asRoot, BOXAUTH_CLIENT_SECRET: fresh.rootSecret }, users);
      expect((await applyUsers()).stdout).to.equal('user/gitops@example.com created\n');
      const changesBefore = await trail();
      expect((await applyUsers()).stdout).to.equal('user/gitops@example.com unchanged\n');
      expect(await trail(), 'no record_changed event for the user').to.deep.equal(changesBefore);
    } finally {
      await fresh.stop();
    }
  });

  it('idp applies examples/identityprovider.yaml with the secrets of its Secrets; get, list and set-secret never print one', async function () {
    const applied = await cli(['idp', 'apply', '-f', projectPath('examples', 'identityprovider.yaml')]);
    expect(applied.code, applied.stderr).to.equal(0);
    expect(applied.stdout).to.equal('idp/corp-sso created\nidp/corp-ldap created\n');
    expect(applied.stderr).to.include('skipped Secret corp-sso-credentials (read for the providers that name it)');
    const factorKey = Buffer.from(fs.readFileSync(path.join(box.dataDir, 'factor-key'), 'utf8').trim(), 'base64');
    const stored = async (id: string): Promise<string | undefined> => {
      const db = new pg.Client({ connectionString: box.databaseUrl });
      await db.connect();
      try {
        const { rows } = await db.query('SELECT secret_sealed FROM identity_providers WHERE id = $1', [id]);
        return providerSecret(factorKey, id, rows[0].secret_sealed);
      } finally {
        await db.end();
      }
    };
    expect(await stored('corp-sso')).to.equal('change-me-corp-sso-secret');
    expect(await stored('corp-ldap')).to.equal('change-me-ldap-bind-password'); // ldap: key bind-password
    const list = await cli(['idp', 'list']);
    expect(JSON.parse(list.stdout).map((p: { id: string }) => p.id)).to.deep.equal(['corp-ldap', 'corp-sso']);
    const table = await cli(['idp', 'list', '-o', 'table']);
    expect(table.stdout).to.match(/^ID +TYPE +DISPLAY_NAME +DISABLED +MANAGED_BY\ncorp-ldap +ldap +Corp directory +false *\n/);
    const got = await cli(['idp', 'get', 'corp-sso', '-o', 'yaml']);
    expect(YAML.parse(got.stdout)).to.include({ id: 'corp-sso', type: 'oidc' }).and.not.have.property('secret');
    for (const out of [list.stdout, table.stdout, got.stdout]) expect(out).to.not.include('change-me');

    const set = await cli(['idp', 'set-secret', 'corp-sso', '--secret-stdin'], {}, 'the-rotated-secret\n');
    expect(set.code, set.stderr).to.equal(0);
    expect(set.stdout).to.equal('idp/corp-sso secret set\n');
    expect(await stored('corp-sso')).to.equal('the-rotated-secret');
    expect(JSON.parse((await cli(['idp', 'get', 'corp-sso'])).stdout)).to.include({ displayName: 'Corp SSO' }); // the rest as it was
    const empty = await cli(['idp', 'set-secret', 'corp-sso', '--secret-stdin'], {}, '');
    expect(empty.code).to.equal(2);
    expect(empty.stderr).to.include('read no secret; nothing changed');
    expect(await stored('corp-sso')).to.equal('the-rotated-secret');
    // A Kubernetes manifest whose Secret is elsewhere: refused before anything is sent, as the operator would wait for it.
    const manifest =
      'kind: IdentityProvider\nmetadata: {name: lone}\nspec: {type: github, github: {clientId: x}, secretRef: {name: elsewhere}}\n';
    const lone = await cli(['idp', 'apply', '-f', '-'], {}, manifest);
    expect(lone.code).to.equal(2);
    expect(lone.stderr).to.include('IdentityProvider lone reads its secret from Secret elsewhere, which is not in this file');
    for (const id of ['corp-sso', 'corp-ldap']) expect((await cli(['idp', 'delete', id])).stdout).to.equal(`idp/${id} deleted\n`);
  });

  it('groups by name or id: user new --group, add-to-group, remove-from-group, set-groups; an unknown name changes nothing', async function () {
    for (const name of ['editors', 'reviewers', 'writers']) expect((await cli(['group', 'new', name])).code).to.equal(0);
    const reviewers = JSON.parse((await cli(['group', 'list'])).stdout).find((g: any) => g.name === 'reviewers');
    const made = await cli(['user', 'new', 'ed@example.com:editor-password', '--group', 'editors', '--group', String(reviewers.id)]);
    expect(made.code, made.stderr).to.equal(0);
    const groupsOf = async () =>
      JSON.parse((await cli(['user', 'get', 'ed@example.com'])).stdout)
        .groups.map((g: any) => g.name)
        .sort();
    expect(await groupsOf()).to.deep.equal(['editors', 'reviewers']);

    const unknown = await cli(['user', 'new', 'not-made@example.com:some-password', '--group', 'editorz']);
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr.trim().split('\n')).to.have.length(1);
    expect(unknown.stderr).to.include('no group named "editorz"');
    expect(JSON.parse((await cli(['user', 'list'])).stdout).map((u: any) => u.email)).not.to.include('not-made@example.com');

    expect((await cli(['user', 'remove-from-group', 'ed@example.com', 'reviewers'])).code).to.equal(0);
    expect(await groupsOf()).to.deep.equal(['editors']);
    const added = await cli(['user', 'add-to-group', 'ed@example.com', 'writers', 'reviewers']);
    expect(added.code, added.stderr).to.equal(0);
    expect(added.stdout).to.include('ed@example.com is now in editors, reviewers, writers');
    expect(await groupsOf()).to.deep.equal(['editors', 'reviewers', 'writers']);
    expect((await cli(['user', 'set-groups', 'ed@example.com', 'writers'])).code).to.equal(0);
    expect(await groupsOf()).to.deep.equal(['writers']);
    const typo = await cli(['user', 'add-to-group', 'ed@example.com', 'editors', 'nope']);
    expect(typo.code).to.equal(1);
    expect(typo.stderr).to.include('no group named "nope"');
    expect(await groupsOf()).to.deep.equal(['writers']);
    expect((await cli(['user', 'add-to-group', 'ed@example.com'])).code).to.equal(2);
  });

  it('--output table|json|yaml on every list and get: a table on a terminal, JSON when piped', async function () {
    const yaml = await cli(['user', 'list', '--output', 'yaml']);
    expect(yaml.code, yaml.stderr).to.equal(0);
    expect(YAML.parse(yaml.stdout).map((u: any) => u.email)).to.include('ed@example.com');
    const users = (await cli(['user', 'list', '-o', 'table'])).stdout.split('\n');
    expect(users[0]).to.match(/^ID +EMAIL +EMAIL_VERIFIED +ACTIVE +GROUPS$/);
    expect(users.find((l) => l.includes('ed@example.com'))).to.match(/^\d+ +ed@example\.com +true +true +writers$/);
    expect((await cli(['group', 'list', '-o', 'table'])).stdout).to.match(/^ID +NAME +REQUIRE_SECOND_FACTOR +DESCRIPTION\n/);
    expect((await cli(['client', 'list', '-o', 'table'])).stdout).to.match(/^ID +GRANT_TYPES +DESCRIPTION\n/);
    expect((await cli(['client', 'get', 'cli-a', '-o', 'table'])).stdout).to.match(/\ncli-a +client_credentials\n$/);
    expect(YAML.parse((await cli(['client', 'get', 'cli-b', '-o', 'yaml'])).stdout).scope).to.deep.equal(['profile']);
    expect((await cli(['policy', 'list', '-o', 'table'])).stdout).to.match(/^ID +ENGINE +APP +LINK +DESCRIPTION\n/);
    expect((await cli(['policy', 'get', 'cli-a', '-o', 'table'])).stdout).to.match(/\ncli-a +allow +Client\/cli-a\n$/);
    const sessions = (await cli(['session', 'list', '-o', 'table'])).stdout.split('\n');
    expect(sessions[0]).to.match(/^ID +CLIENT +USER +TYPE +ACTIVE +START$/);
    expect(sessions.some((l) => / root +client_credentials +(true|false) +\d{4}-/.test(l))).to.equal(true);
    const terminal = await onTerminal(['user', 'list']);
    expect(terminal.code, terminal.out).to.equal(0);
    expect(terminal.out).to.match(/^ID +EMAIL +EMAIL_VERIFIED +ACTIVE +GROUPS\r?$/m);
    const wrong = await cli(['user', 'list', '--output', 'xml']);
    expect(wrong.code).to.equal(2);
    expect(wrong.stderr).to.include('--output must be table, json or yaml');
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

  it("explain: a refused decision by its id, or a request replayed, each policy's verdict and the failing matcho path", async function () {
    const env = { BOXAUTH_URL: box.url, BOXAUTH_CLIENT_ID: 'root', BOXAUTH_CLIENT_SECRET: box.rootSecret };
    const root = await box.rootToken();
    await box.addClient('buyer', { audience: ['https://shop.example'] }, { secret: 'buyer-secret', policy: false });
    expect((await box.json('PUT', '/App/shop', { urls: ['https://shop.example'] }, root)).status).to.equal(201);
    await box.json(
      'PUT',
      '/AccessPolicy/shop-reads',
      { app: 'shop', engine: 'matcho', link: [{ id: 'buyer', resourceType: 'Client' }], matcho: { 'request-method': 'get' } },
      root,
    );
    const token = (
      await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', audience: 'https://shop.example' },
        { Authorization: basic('buyer', 'buyer-secret') },
      )
    ).body.access_token;
    const refused = await box.request('POST', '/authz/http/shop/orders', {
      headers: { Authorization: `Bearer ${token}`, Host: 'shop.example' },
    });
    expect(refused.status).to.equal(403);
    const id = refused.headers.get('x-boxauth-decision')!;

    const byId = await eventually('the refusal to be kept', async () => {
      const run = await cli(['explain', id, '-o', 'table'], env);
      return run.code === 0 && run;
    });
    expect(byId.stdout).to.include(`decision ${id}`);
    expect(byId.stdout).to.match(/refused \(403\) at app shop/);
    expect(byId.stdout).to.match(/^shop-reads +does not allow +request-method: "post" does not match "get"$/m);

    const replayed = await cli(['explain', '--app', 'shop', '--method', 'DELETE', '--path', '/orders/1', '--client', 'buyer'], env);
    expect(replayed.code, replayed.stderr).to.equal(0);
    const json = JSON.parse(replayed.stdout);
    expect(json).to.include({ app: 'shop', allowed: false, status: 403 });
    expect(json.policies).to.deep.include({
      id: 'shop-reads',
      verdict: 'does not allow',
      why: 'request-method: "delete" does not match "get"',
    });
    const unknown = await cli(['explain', '00000000-0000-0000-0000-000000000000'], env);
    expect(unknown.code).to.not.equal(0);
    expect(unknown.stderr).to.match(/only refusals of an identified caller are kept/);
  });

  it("one-line confirmations show what the box said escaped: an email's terminal escapes and bidi overrides are not sent", async function () {
    // Names the box refuses now, as rows from before it did (or written by SQL): the CLI trusts no server string.
    const email = 'ann\u001b]0;pwned\u0007\u202Emoc.elpmaxe@example.com';
    const group = 'ops\u001b[2J\u2066';
    const db = new pg.Client({ connectionString: box.databaseUrl });
    await db.connect();
    let userId: number;
    let groupId: number;
    try {
      const hash = await argon2.hash('old-password-1', { type: argon2.argon2id });
      userId = (await db.query('INSERT INTO users (email, password_hash) VALUES ($1, $2) RETURNING id', [email, hash])).rows[0].id;
      groupId = (await db.query('INSERT INTO groups (name) VALUES ($1) RETURNING id', [group])).rows[0].id;
    } finally {
      await db.end();
    }
    const runs = {
      'add-to-group': await cli(['user', 'add-to-group', String(userId), String(groupId)]),
      'set-password': await cli(['user', 'set-password', String(userId), '--password-stdin'], {}, 'new-password-1\n'),
      'user delete': await cli(['user', 'delete', String(userId)]),
      'group delete': await cli(['group', 'delete', String(groupId)]),
    };
    for (const [what, run] of Object.entries(runs)) {
      expect(run.code, `${what}: ${run.stderr}`).to.equal(0);
      expect(run.stdout, what).not.to.match(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
    }
    const shownEmail = 'ann\\u001b]0;pwned\\u0007\\u202emoc.elpmaxe@example.com';
    const shownGroup = 'ops\\u001b[2J\\u2066';
    expect(runs['add-to-group'].stdout).to.equal(`${shownEmail} is now in ${shownGroup}.\n`);
    expect(runs['set-password'].stdout).to.include(`Password of ${shownEmail} (id ${userId})`);
    expect(runs['user delete'].stdout).to.include(`Deleted user ${shownEmail} from box`);
    expect(runs['group delete'].stdout).to.equal(`Deleted group ${shownGroup}.\n`);
  });
  it('group new / set --require-second-factor, user factors and user reset-factors', async function () {
    const made = await cli(['group', 'new', 'ops', '--require-second-factor', 'true']);
    expect(made.code, made.stderr).to.equal(0);
    expect(JSON.parse((await cli(['group', 'get', 'ops'])).stdout).require_second_factor).to.equal(true);
    const bad = await cli(['group', 'set', 'ops', '--require-second-factor', 'maybe']);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.include('--require-second-factor takes true or false, not "maybe"');
    const set = await cli(['group', 'set', 'ops', '--require-second-factor', 'false']);
    expect(set.code, set.stderr).to.equal(0);
    expect(JSON.parse(set.stdout).require_second_factor).to.equal(false);

    expect((await cli(['user', 'new', 'factors@example.com:factors-password'])).code).to.equal(0);
    const user = JSON.parse((await cli(['user', 'get', 'factors@example.com'])).stdout);
    await addDummyPasskey(box.databaseUrl!, user.id, 'yubikey');
    const listed = await cli(['user', 'factors', 'factors@example.com', '-o', 'table']);
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout).to.match(/^\d+ +passkey +yubikey /m);
    expect(listed.stdout).to.include(`factors@example.com (id ${user.id}): 0 recovery codes left.`);

    const reset = await cli(['user', 'reset-factors', 'factors@example.com']);
    expect(reset.code, reset.stderr).to.equal(0);
    expect(reset.stdout).to.include(`Second factors of factors@example.com (id ${user.id}) reset in box`);
    const after = JSON.parse((await cli(['user', 'factors', String(user.id)])).stdout);
    expect(after).to.deep.equal({ factors: [], recovery_codes_left: 0, must_enrol: true, group_requires: false });
    const unknown = await cli(['user', 'reset-factors', 'nobody@example.com']);
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.include('no user with email nobody@example.com');
  });

  it('user sessions / end-sessions (all, --sid, --grant), sessions --filter --client, user vouch / unvouch', async function () {
    const redirect = 'https://app.example/cb';
    await box.addClient(
      'cli-app',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: redirect, refresh_token: true } },
      },
      { secret: 'cli-app-secret-123', policy: false },
    );
    for (const who of ['sessions-a@example.com', 'sessions-b@example.com'])
      expect((await cli(['user', 'new', `${who}:sessions-password`])).code).to.equal(0);
    const authorize = `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'cli-app', redirect_uri: redirect })}`;
    /** A signed-in browser of `email` and the refresh token of a grant it obtained. */
    const signedIn = async (email: string): Promise<{ browser: FormAgent; refreshToken: string }> => {
      const browser = new FormAgent(box);
      expect((await browser.signIn(email, 'sessions-password')).status).to.equal(303);
      const code = new URL((await browser.get(authorize)).headers.get('location')!).searchParams.get('code')!;
      const granted = await box.form(
        '/auth/token',
        { grant_type: 'authorization_code', code, redirect_uri: redirect },
        { Authorization: basic('cli-app', 'cli-app-secret-123') },
      );
      return { browser, refreshToken: granted.body.refresh_token };
    };
    const refreshes = async (refreshToken: string): Promise<boolean> =>
      (
        await box.form(
          '/auth/token',
          { grant_type: 'refresh_token', refresh_token: refreshToken },
          { Authorization: basic('cli-app', 'cli-app-secret-123') },
        )
      ).status === 200;
    const signedInStill = async (browser: FormAgent): Promise<boolean> => (await browser.get(authorize)).status === 302;

    const a1 = await signedIn('sessions-a@example.com');
    const a2 = await signedIn('sessions-a@example.com');
    const b = await signedIn('sessions-b@example.com');

    const table = await cli(['user', 'sessions', 'sessions-a@example.com', '-o', 'table']);
    expect(table.code, table.stderr).to.equal(0);
    expect(table.stdout).to.match(/^Signed-in browsers of sessions-a@example\.com \(id \d+\):\nSID +SINCE +FACTORS +FROM +BROWSER\n/);
    expect(table.stdout).to.match(/\nGRANT +CLIENT +SINCE +LAST_USED +FACTORS +FROM\n/);
    expect(table.stdout).to.match(/ cli-app +\d{4}-.* pwd /);
    const listed = JSON.parse((await cli(['user', 'sessions', 'sessions-a@example.com'])).stdout);
    expect(listed.browsers).to.have.length(2);
    expect(listed.grants).to.have.length(2);

    const all = await cli(['session', 'list', '--grants', '--filter', 'SESSIONS-', '--client', 'cli-app', '-o', 'table']);
    expect(all.code, all.stderr).to.equal(0);
    expect(all.stdout.split('\n')[0]).to.match(/^EMAIL +GRANT +CLIENT +SINCE +LAST_USED +FACTORS +FROM$/);
    expect(all.stdout.split('\n').filter((l) => l.includes('cli-app'))).to.have.length(3);
    expect(
      JSON.parse((await cli(['session', 'list', '--grants', '--filter', 'sessions-b'])).stdout).map((g: any) => g.email),
    ).to.deep.equal(['sessions-b@example.com']);
    expect(JSON.parse((await cli(['session', 'list', '--grants', '--client', 'no-such-client'])).stdout)).to.deep.equal([]);
    const browsers = JSON.parse((await cli(['session', 'list', '--browsers', '--filter', 'sessions-a'])).stdout);
    expect(browsers).to.have.length(2);
    expect((await cli(['session', 'list', '--browsers', '--client', 'cli-app'])).code).to.equal(2);

    // One browser: that one is signed out and its grant refused; the other stays.
    const sid = listed.browsers.find((x: any) => x.sid === listed.grants.find((g: any) => g.sid)!.sid)!.sid;
    const oneBrowser = await cli(['user', 'end-sessions', 'sessions-a@example.com', '--sid', sid]);
    expect(oneBrowser.code, oneBrowser.stderr).to.equal(0);
    expect(oneBrowser.stdout).to.include(`Signed sessions-a@example.com out of browser ${sid}`);
    expect([await signedInStill(a1.browser), await signedInStill(a2.browser)].sort()).to.deep.equal([false, true]);
    expect([await refreshes(a1.refreshToken), await refreshes(a2.refreshToken)].sort()).to.deep.equal([false, true]);
    // Someone else's browser through this person: refused, and it stays signed in.
    const theirs = JSON.parse((await cli(['user', 'sessions', 'sessions-b@example.com'])).stdout);
    const crossed = await cli(['user', 'end-sessions', 'sessions-a@example.com', '--sid', theirs.browsers[0].sid]);
    expect(crossed.code).to.equal(1);
    expect(crossed.stderr.trim().split('\n')).to.have.length(1);
    expect(await signedInStill(b.browser)).to.equal(true);
    // One grant, then everything.
    const grantEnded = await cli(['user', 'end-sessions', 'sessions-b@example.com', '--grant', theirs.grants[0].id]);
    expect(grantEnded.code, grantEnded.stderr).to.equal(0);
    expect(await refreshes(b.refreshToken)).to.equal(false);
    expect(await signedInStill(b.browser)).to.equal(true);
    const everything = await cli(['user', 'end-sessions', 'sessions-a@example.com']);
    expect(everything.code, everything.stderr).to.equal(0);
    expect(everything.stdout).to.include('Ended every session of sessions-a@example.com');
    expect(JSON.parse((await cli(['user', 'sessions', 'sessions-a@example.com'])).stdout)).to.deep.equal({ browsers: [], grants: [] });
    expect((await cli(['user', 'end-sessions', 'sessions-a@example.com', '--sid', 'x', '--grant', 'y'])).code).to.equal(2);

    const unvouched = await cli(['user', 'unvouch', 'sessions-a@example.com']);
    expect(unvouched.code, unvouched.stderr).to.equal(0);
    expect(unvouched.stdout).to.include('The box no longer vouches for sessions-a@example.com');
    expect(JSON.parse((await cli(['user', 'get', 'sessions-a@example.com'])).stdout)).to.include({
      email_verified: false,
      must_verify_email: false,
    });
    expect((await cli(['user', 'vouch', 'sessions-a@example.com'])).stdout).to.include('The box now vouches for sessions-a@example.com');
    expect(JSON.parse((await cli(['user', 'get', 'sessions-a@example.com'])).stdout).email_verified).to.equal(true);
    await eventually('the vouching audited', async () => box.logs.some((l) => l.includes('"action":"email-unvouched"')));

    const help = (await cli(['user', 'help'])).stdout;
    for (const sub of ['user sessions <id|email>', 'user end-sessions <id|email>', '--sid <sid>', 'user vouch', 'user unvouch'])
      expect(help).to.include(sub);
    // One command for sessions, under both names (kubectl's pod and pods).
    const sessionsHelp = await cli(['sessions', '--help']);
    expect(sessionsHelp.stdout).to.equal((await cli(['session', '--help'])).stdout);
    expect(sessionsHelp.stdout).to.match(/^Usage: boxauth session /);
    expect(sessionsHelp.stdout).to.include('--output table|json|yaml');
  });
});
