// scripts/oidf-setup for the OpenID Foundation's SSF plans, run as the harness runs it (its client
// `oidf-ssf-receiver` registered first, as register.py does): the receiver may manage its streams
// and have the events of the setup's person, the suite's address is allowed, and for the CAEP plan
// its bounded job makes real events happen — a sign-in and sign-out, a new password — which a
// receiver's stream gets as SETs. The job ends by itself (here after a few seconds).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { basic, boxForSuite, eventually, type Box } from '../support/box.js';
import { projectPath } from '../../api/paths.js';

const run = promisify(execFile);
const SESSION_REVOKED = 'https://schemas.openid.net/secevent/caep/event-type/session-revoked';
const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';

describe('scripts/oidf-setup for the SSF plans', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  const tokens: string[] = [];
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      tokens.push(body);
      res.writeHead(202).end();
    });
  });
  let job: number | undefined;

  boxForSuite((b, r) => ([box, root] = [b, r]), { env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32' } });

  before(async function () {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  });
  after(async function () {
    if (job !== undefined)
      try {
        process.kill(job);
      } catch {
        // ended by itself already
      }
    await new Promise((resolve) => receiver.close(resolve));
  });

  const setup = (plan: string, log: string): Promise<{ stdout: string }> =>
    run(path.join(projectPath(), 'scripts', 'oidf-setup'), [plan, box.url], {
      env: {
        ...process.env,
        OIDF_ROOT_TOKEN: root,
        OIDF_SSF_CLIENT_ID: 'oidf-ssf-receiver',
        OIDF_SSF_EVENTS_SECONDS: '25',
        OIDF_SSF_EVENTS_PAUSE: '2',
        OIDF_SUITE_URL: 'none',
        OIDF_SSF_EVENTS_LOG: log,
      },
    });

  it('does nothing for another plan, and is idempotent', async function () {
    const log = path.join(os.tmpdir(), `ssf-setup-${process.pid}.log`);
    expect((await setup('basic', log)).stdout).to.equal('');
    await setup('ssf-tx', log);
    await setup('ssf-tx', log);
    const settings = await box.json('GET', '/settings/notices', undefined, root);
    expect(settings.body.allowed_addresses.filter((a: string) => a === '127.0.0.1/32')).to.have.length(1);
  });

  it('makes real CAEP events about its person for the CAEP plan, which a stream of the receiver gets', async function () {
    const log = path.join(os.tmpdir(), `ssf-events-${process.pid}.log`);
    await box.addClient(
      'oidf-ssf-receiver',
      { grant_types: ['client_credentials'], scope: ['ssf.read', 'ssf.manage'] },
      { secret: 'rx-secret-123', policy: false },
    );
    const token = (
      await box.form(
        '/auth/token',
        { grant_type: 'client_credentials', scope: 'ssf.read ssf.manage' },
        { Authorization: basic('oidf-ssf-receiver', 'rx-secret-123') },
      )
    ).body.access_token as string;
    const { stdout } = await setup('ssf-tx-caep', log);
    job = Number(/pid (\d+)/.exec(stdout)?.[1]);
    const made = await box.json(
      'POST',
      '/ssf/streams',
      {
        events_requested: [SESSION_REVOKED, CREDENTIAL_CHANGE],
        delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/` },
      },
      token,
    );
    expect(made.status, made.text).to.equal(201);
    const jwks = createRemoteJWKSet(new URL(`${box.url}/.well-known/jwks.json`));
    const seen = await eventually(
      'a session-revoked and a credential-change',
      async () => {
        const types = new Set<string>();
        for (const t of tokens)
          for (const type of Object.keys((await jwtVerify(t, jwks, { issuer: box.url })).payload.events as object)) types.add(type);
        return types.has(SESSION_REVOKED) && types.has(CREDENTIAL_CHANGE) ? types : undefined;
      },
      40_000,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\njob log:\n${fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '(none)'}`);
    });
    expect([...seen]).to.include.members([SESSION_REVOKED, CREDENTIAL_CHANGE]);
  });
});
