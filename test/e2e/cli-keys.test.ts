// boxauth keys and boxauth settings, run as a script would: the keys listed, one rotated (the old
// one still published), a wrong algorithm refused, the settings printed without a secret.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { projectPath } from '../../api/paths.js';
import { Box } from '../support/box.js';

const CLI = projectPath('bin', 'boxauth.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('boxauth keys and settings', function () {
  this.timeout(60_000);
  let box: Box;
  let env: NodeJS.ProcessEnv;

  before(async function () {
    box = await Box.start();
    env = {
      PATH: process.env.PATH,
      HOME: '/nonexistent',
      BOXAUTH_URL: box.url,
      BOXAUTH_CLIENT_ID: 'root',
      BOXAUTH_CLIENT_SECRET: box.rootSecret,
    };
  });
  after(async function () {
    await box?.stop();
  });

  function cli(args: string[]): Promise<Run> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [CLI, ...args], { env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
      child.stdin.end();
    });
  }

  it("keys lists each algorithm's active key; keys rotate replaces one and the old one stays published", async function () {
    const table = await cli(['keys', '-o', 'table']);
    expect(table.code, table.stderr).to.equal(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).to.match(/^KID +ALG +STATE +SIGNS +CREATED +ROTATES +RETIRED +PUBLISHED_UNTIL$/);
    expect(lines.filter((l) => / active /.test(l))).to.have.length(3);
    const before = JSON.parse((await cli(['keys'])).stdout) as { kid: string; alg: string; state: string }[];
    const oldKid = before.find((k) => k.alg === 'ES256' && k.state === 'active')!.kid;

    const rotated = await cli(['keys', 'rotate', '-o', 'table']);
    expect(rotated.code, rotated.stderr).to.equal(0);
    expect(rotated.stdout).to.match(
      new RegExp(
        `^Rotated the ES256 key of box "default": \\S+ signs from now on; ${oldKid} no longer signs and stays published while tokens it signed may live\\.\\n$`,
      ),
    );
    const after = JSON.parse((await cli(['keys'])).stdout) as { kid: string; alg: string; state: string; published_until: string }[];
    expect(after.find((k) => k.kid === oldKid)).to.include({ state: 'retired' });
    expect(after.filter((k) => k.alg === 'ES256' && k.state === 'active')).to.have.length(1);
    const jwks = (await box.json('GET', '/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid);
    expect(jwks).to.include(oldKid);

    const json = JSON.parse((await cli(['keys', 'rotate', '--alg', 'RS256'])).stdout);
    expect(json.rotated.alg).to.equal('RS256');
  });

  it("a wrong algorithm is one line with the box's reason and exit 1; help names the subcommands", async function () {
    const wrong = await cli(['keys', 'rotate', '--alg', 'HS256']);
    expect(wrong.code).to.equal(1);
    expect(wrong.stderr.trim().split('\n')).to.have.length(1);
    expect(wrong.stderr).to.include('alg: must be one of ES256, RS256, EdDSA');
    const help = await cli(['keys', '--help']);
    expect(help.code).to.equal(0);
    expect(help.stdout).to.include('boxauth keys rotate [--alg ES256|RS256|EdDSA]');
    expect((await cli(['keys', 'spin'])).code).to.equal(2);
    expect((await cli(['--help'])).stdout).to.match(/^ {2}keys +the box's signing keys: list, rotate$/m);
  });

  it("settings prints the effective configuration, and not the root client's secret", async function () {
    const run = await cli(['settings']);
    expect(run.code, run.stderr).to.equal(0);
    const settings = JSON.parse(run.stdout);
    expect(settings.issuer).to.equal(box.url);
    expect(settings.sessions.browser_session_hours).to.equal(12);
    expect(run.stdout).not.to.include(box.rootSecret);
    const yaml = await cli(['settings', '-o', 'yaml']);
    expect(yaml.stdout).to.include(`issuer: ${box.url}`);
  });
});
