// boxauth events (issue 51): the audit trail with its filters, as a script reads it (JSON) and as a
// person does (a table); --follow printing each new event as it is recorded; a person's email as
// the filter; an event whose record holds terminal escapes printed escaped; bad input refused.
import { spawn } from 'node:child_process';
import { expect } from 'chai';
import { Box, eventually } from '../support/box.js';
import { CLI, runCli, type CliRun } from '../support/cli.js';
import { FormAgent } from '../support/form-agent.js';

/** A byte a terminal acts on (ESC, BEL, the C1 controls) or a bidi control: what no output may hold raw. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('boxauth events', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let env: NodeJS.ProcessEnv;

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
    env = { PATH: process.env.PATH, BOXAUTH_URL: box.url, BOXAUTH_CLIENT_ID: 'root', BOXAUTH_CLIENT_SECRET: box.rootSecret };
  });
  after(async function () {
    await box?.stop();
  });

  const cli = (args: string[]): Promise<CliRun> => runCli(args, env);

  it('lists the trail newest first, filtered, as JSON for scripts and as a table for people', async function () {
    const user = (await box.json('POST', '/users', { email: 'ev@example.com', password: 'ev-password-1' }, root)).body;
    await box.json('PUT', `/users/${user.id}`, { active: false }, root);
    const run = await cli(['events', '--user', 'ev@example.com', '--event', 'account']);
    expect(run.code, run.stderr).to.equal(0);
    const events = JSON.parse(run.stdout) as { action: string; actor: { client: string } }[];
    expect(events.map((e) => e.action)).to.deep.equal(['deactivated', 'email-vouched']);
    expect(events[0]!.actor.client).to.equal('root');
    const table = await cli(['events', '--user', String(user.id), '--type', 'User', '-o', 'table']);
    expect(table.stdout.split('\n')[0]).to.match(/^TIME +EVENT +ACTION +OUTCOME +ACTOR +SUBJECT +USER +RECORD +ID$/);
    expect(table.stdout).to.match(new RegExp(`record_changed +changed +success +client root +${user.id} +User/${user.id}`));
  });

  it('--follow prints each new event as it is recorded, until stopped', async function () {
    const child = spawn(process.execPath, [CLI, 'events', '--follow', '--type', 'App', '--limit', '1', '-o', 'table'], { env });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    try {
      // Its first read done (the table's header printed), as a person would start to watch: an event
      // recorded while that read ran may commit after a newer id it already saw (ids are not commit order).
      await eventually('the table header printed', async () => {
        if (err) throw new Error(err);
        return out.startsWith('TIME  EVENT');
      });
      await box.json('PUT', '/App/followed-1', { urls: ['https://followed-1.example'] }, root);
      await eventually('the first App printed', async () => {
        if (err) throw new Error(err);
        return out.includes('App/followed-1');
      });
      await box.json('PUT', '/App/followed-2', { urls: ['https://followed-2.example'] }, root);
      await box.json('DELETE', '/App/followed-1', undefined, root);
      await eventually('what came after, in order', async () => /App\/followed-2[\s\S]*deleted[^\n]*App\/followed-1/.test(out));
      expect(out.match(/App\/followed-2/g)).to.have.length(1); // each event once
    } finally {
      child.kill('SIGINT');
    }
  });

  it('prints the escapes a record holds escaped, never raw', async function () {
    const user = (await box.json('POST', '/users', { email: 'esc@example.com', password: 'esc-password-1' }, root)).body;
    const data = JSON.stringify({ name: 'x\u001b]0;owned\u0007\u001b[2Jy' });
    expect((await box.json('PUT', `/users/${user.id}`, { data }, root)).status).to.equal(200);
    for (const output of ['table', 'json', 'yaml']) {
      const run = await cli(['events', '--user', String(user.id), '--event', 'record_changed', '-o', output]);
      expect(run.code, run.stderr).to.equal(0);
      if (output !== 'table') expect(run.stdout).to.contain('owned');
      expect(RAW_CONTROL.test(run.stdout), output).to.equal(false);
    }
  });

  it('refuses what it cannot read, with exit code 2 and a line that says why', async function () {
    await new FormAgent(box).signIn('nobody@example.com', 'wrong-password-1');
    for (const args of [
      ['events', '--since', 'last week'],
      ['events', '--limit', '0'],
      ['events', '--outcome', 'maybe'],
      ['events', '--id', 'x'],
      ['events', 'extra'],
    ]) {
      const run = await cli(args);
      expect(run.code, args.join(' ')).to.equal(2);
      expect(run.stderr).to.match(/^boxauth events: .+\n$/);
    }
    const help = await cli(['events', '--help']);
    expect(help.stdout).to.contain('--follow');
  });
});
