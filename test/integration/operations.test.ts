// Operations: health, readiness, metrics, logs without secrets, configuration errors.
import { expect } from 'chai';
import { CONFIG_VARIABLES, OPERATOR_CONFIG_VARIABLES } from '../../api/config-reference.js';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { projectPath } from '../../api/paths.js';
import { Box, basic, eventually } from '../support/box.js';
import { freePort, onFreePorts } from '../support/ports.js';
import { adminUrl, createDatabase } from '../support/postgres.js';

describe('operations', function () {
  let box: Box;
  let secret: string;

  before(async function () {
    box = await Box.start({ env: { BOXAUTH_WORKERS: '2' } });
    ({ secret } = await box.addClient('ops', { auth: { client_credentials: { refresh_token: true } } }));
  });
  after(async function () {
    await box?.stop();
  });

  it('healthz and readyz answer without a token', async function () {
    expect((await box.json('GET', '/healthz')).body).to.include({ status: 'ok', box: 'default' });
    const ready = await box.json('GET', '/readyz');
    expect(ready.status).to.equal(200);
    expect(ready.body.status).to.equal('ready');
  });

  it('metrics count issued tokens across all workers', async function () {
    for (let i = 0; i < 6; i++)
      await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('ops', secret) });
    const text = await box.metrics();
    const line = text.split('\n').find((l) => l.startsWith('boxauth_tokens_issued_total{') && l.includes('grant="client_credentials"'));
    expect(line, text.slice(0, 500)).to.be.a('string');
    expect(Number(line!.split(' ').pop())).to.be.at.least(6);
    expect(text).to.include('boxauth_http_request_duration_seconds_bucket');
  });

  it('serves metrics on their own port only: the API port has no /metrics', async function () {
    const res = await box.request('GET', '/metrics', { headers: { Authorization: `Bearer ${await box.rootToken()}` } });
    expect(res.status).to.equal(404);
  });

  it('never writes tokens, secrets or passwords to the log', async function () {
    const issued = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('ops', secret) });
    const { access_token, refresh_token } = issued.body;
    await box.json('GET', `/Client/ops?access_token=${encodeURIComponent(access_token)}`);
    await box.json('POST', '/auth/token', { grant_type: 'refresh_token', client_id: 'ops', refresh_token });
    await box.json('PUT', '/Client/ops2', { grant_types: ['client_credentials'], secret: 'very-private-secret' }, access_token);
    await box.form('/auth/token', { grant_type: 'client_credentials', client_id: 'ops', client_secret: 'wrong-but-private' });
    // access log lines are written in batches, at least every 100 ms: the last request's (401) ends the wait
    await eventually('the access log line of the refused token request', async () => box.logs.some((l) => l.includes('"status":401')));
    const logs = box.logs.join('\n');
    expect(logs).to.include('"url":"/Client/ops?access_token=[redacted]"');
    for (const s of [secret, access_token, refresh_token, 'very-private-secret', 'wrong-but-private', box.rootSecret]) {
      expect(logs).not.to.include(s);
    }
    for (const line of box.logs.filter((l) => l.startsWith('{'))) expect(() => JSON.parse(line)).not.to.throw();
  });

  it('keeps a token out of the log whatever the encoding of the access_token name, and headers and cookies too', async function () {
    const root = await box.rootToken();
    const cookieSecret = `cookie-secret-${Date.now()}`;
    const headerSecret = `header-secret-${Date.now()}`;
    const encoded = await box.json('GET', `/users?access%5Ftoken=${encodeURIComponent(root)}`);
    expect(encoded.status, encoded.text).to.equal(200);
    expect((await box.json('GET', `/users?%61ccess_token=${encodeURIComponent(root)}&q=hex`)).status).to.equal(200);
    await box.json('GET', `/users?Access_Token=${encodeURIComponent(root)}`);
    await box.json('GET', '/users?q=header', undefined, root, { Cookie: `boxauth_session=${cookieSecret}` });
    await box.json('GET', '/users?q=bad-header', undefined, headerSecret);
    const expected = [
      '/users?access%5Ftoken=[redacted]"',
      '/users?%61ccess_token=[redacted]&q=hex"',
      '/users?Access_Token=[redacted]"',
      '/users?q=header"',
      '/users?q=bad-header"',
    ].map((url) => `"url":"${url}`);
    // access log lines are written in batches, at least every 100 ms
    await eventually('the access log lines of these requests', async () => expected.every((e) => box.logs.some((l) => l.includes(e))));
    for (const line of box.logs) {
      for (const s of [root, encodeURIComponent(root), cookieSecret, headerSecret]) expect(line).not.to.include(s);
    }
    for (const e of expected)
      expect(
        box.logs.some((l) => l.includes(e)),
        e,
      ).to.equal(true);
  });

  it('keeps the credentials of token exchange, the device flow, PAR and the code flow out of logged URLs', async function () {
    const root = await box.rootToken();
    const put = await box.json(
      'PUT',
      '/Client/ops-browser',
      {
        grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:device_code'],
        secret: 'ops-browser-secret',
        auth: { authorization_code: { redirect_uri: 'https://ops.example/cb' } },
      },
      root,
    );
    expect(put.status, put.text).to.equal(201);
    const device = await box.form('/auth/device', { client_id: 'ops-browser', client_secret: 'ops-browser-secret' });
    expect(device.status, device.text).to.equal(200);
    const pushed = await box.form(
      '/auth/par',
      { response_type: 'code', redirect_uri: 'https://ops.example/cb', state: 'ops-state' },
      { Authorization: basic('ops-browser', 'ops-browser-secret') },
    );
    expect(pushed.status, pushed.text).to.equal(201);
    const credentials: Record<string, string> = {
      subject_token: root,
      actor_token: (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('ops', secret) })).body
        .access_token,
      user_code: device.body.user_code,
      device_code: device.body.device_code,
      request_uri: pushed.body.request_uri,
      code: `code-${Date.now()}`,
      client_secret: 'ops-browser-secret',
      dpop: `dpop-proof-${Date.now()}`,
    };
    // Where a person's browser or a careless client puts them: query strings.
    const urls = [
      `/auth/device/verify?user_code=${encodeURIComponent(credentials.user_code!)}`,
      `/auth/authorize?client_id=ops-browser&request_uri=${encodeURIComponent(credentials.request_uri!)}`,
      `/auth/token?grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token=${encodeURIComponent(credentials.subject_token!)}&actor_token=${encodeURIComponent(credentials.actor_token!)}`,
      `/auth/token?device_code=${encodeURIComponent(credentials.device_code!)}&client_secret=${credentials.client_secret}&dpop=${credentials.dpop}`,
      `/admin/callback?code=${credentials.code}&state=ops-state`,
    ];
    for (const url of urls) await box.request(url.startsWith('/auth/token') ? 'POST' : 'GET', url, { headers: { Accept: 'text/html' } });
    const logged = [
      '"url":"/auth/device/verify?user_code=[redacted]"',
      '"url":"/auth/authorize?client_id=ops-browser&request_uri=[redacted]"',
      '"url":"/auth/token?grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token=[redacted]&actor_token=[redacted]"',
      '"url":"/auth/token?device_code=[redacted]&client_secret=[redacted]&dpop=[redacted]"',
      '"url":"/admin/callback?code=[redacted]&state=[redacted]"',
    ];
    // access log lines are written in batches, at least every 100 ms
    await eventually('the access log lines of these requests', async () => logged.every((e) => box.logs.some((l) => l.includes(e))));
    for (const line of box.logs) {
      for (const [name, value] of Object.entries(credentials)) {
        expect(line, name).not.to.include(value);
        expect(line, name).not.to.include(encodeURIComponent(value));
      }
    }
  });

  it('a bad configuration stops start-up with a message naming the variable', function () {
    const res = spawnSync(process.execPath, [projectPath('dist', 'api', 'main.js')], {
      env: { PATH: process.env.PATH, BOXAUTH_JWT_ALG: 'HS256' },
      encoding: 'utf8',
    });
    expect(res.status).to.equal(2);
    expect(res.stderr).to.include('BOXAUTH_JWT_ALG');
  });

  it("--help lists every variable of the configuration, the API's and the operator's", function () {
    for (const [main, variables] of [
      ['api', CONFIG_VARIABLES],
      ['operator', OPERATOR_CONFIG_VARIABLES],
    ] as const) {
      const res = spawnSync(process.execPath, [projectPath('dist', main, 'main.js'), '--help'], { encoding: 'utf8' });
      expect(res.status).to.equal(0);
      for (const name of variables.flatMap((v) => v.names)) expect(res.stdout).to.include(name);
    }
  });
});

describe('readiness without a database', function () {
  this.timeout(60_000);
  let box: Box;
  let admin: pg.Client;
  let database: string;

  before(async function () {
    const url = await createDatabase();
    database = new URL(url).pathname.slice(1);
    box = await Box.start({ databaseUrl: url });
    admin = new pg.Client({ connectionString: adminUrl() });
    await admin.connect();
  });
  after(async function () {
    await admin?.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
    await admin?.end();
    await box?.stop();
  });

  it('says only "database unreachable" on the public port, and logs what went wrong', async function () {
    // The database goes away under a running box: no new connection is accepted, and the box's are cut.
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [database]);
    const ready = await eventually('/readyz to answer 503', async () => {
      const res = await box.json('GET', '/readyz');
      return res.status === 503 && res;
    });
    expect(ready.body).to.deep.equal({ status: 'unavailable', problems: ['database unreachable'] });
    expect(ready.text).not.to.include(database);
    expect(ready.text).not.to.match(/accepting|127\.0\.0\.1|localhost|postgres/i);
    const logged = (line: string): { msg?: string; err?: string } => (line.startsWith('{') ? JSON.parse(line) : {});
    // The check that saw the cut may have been on a connection as it was cut ("Connection terminated"):
    // each check logs what it met, and the next ones meet the refusal.
    await eventually('the detail in the log', async () => {
      await box.json('GET', '/readyz');
      return box.logs
        .map(logged)
        .some(
          (l) =>
            l.msg === 'readiness: database unreachable' &&
            (l.err ?? '').includes(`database "${database}" is not currently accepting connections`),
        );
    });
  });
});

describe('start-up failures a person can read', function () {
  this.timeout(120_000);
  const main = projectPath('dist', 'api', 'main.js');
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-start-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** A port something else listens on, for as long as `use` runs. */
  async function withBusyPort<T>(use: (port: number) => Promise<T>): Promise<T> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      return await use((server.address() as net.AddressInfo).port);
    } finally {
      server.close();
    }
  }

  async function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, [main], {
      env: {
        PATH: process.env.PATH,
        BOXAUTH_HOST: '127.0.0.1',
        BOXAUTH_DATA_DIR: dir,
        BOXAUTH_ROOT_CLIENT_SECRET: 'start-secret-1',
        // No gRPC listener: its default port (9001) may be another process's, and its failure would
        // come before the one a case looks for.
        BOXAUTH_GRPC_PORT: '0',
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    return { code, stderr };
  }

  it('a bad value names its variable and exits 2, without a stack trace', async function () {
    const { code, stderr } = await start({ BOXAUTH_LOG_LEVEL: 'loud' });
    expect(code).to.equal(2);
    expect(stderr).to.equal('boxauth: BOXAUTH_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, got "loud"\n');
  });

  it('a port in use is named with the variable that chose it: the API port, then the metrics port', async function () {
    const database = await createDatabase();
    await withBusyPort(async (busy) => {
      const api = await start({ DATABASE_URL: database, BOXAUTH_PORT: String(busy), BOXAUTH_METRICS_PORT: String(await freePort()) });
      expect(api.code).to.equal(1);
      expect(api.stderr).to.include(`boxauth: port ${busy} (BOXAUTH_PORT) is in use`);
      expect(api.stderr).not.to.match(/^\s+at /m);
      const metrics = await start({ DATABASE_URL: database, BOXAUTH_PORT: '0', BOXAUTH_METRICS_PORT: String(busy) });
      expect(metrics.code).to.equal(1);
      expect(metrics.stderr).to.include(`boxauth: port ${busy} (BOXAUTH_METRICS_PORT) is in use`);
      // The primary opens the metrics port before its workers listen: again on a new one if it was taken meanwhile.
      const workers = await onFreePorts(1, async ([metricsPort]) => {
        const run = await start({
          DATABASE_URL: database,
          BOXAUTH_WORKERS: '2',
          BOXAUTH_PORT: String(busy),
          BOXAUTH_METRICS_PORT: String(metricsPort),
        });
        if (run.stderr.includes('(BOXAUTH_METRICS_PORT) is in use')) throw new Error(run.stderr);
        return run;
      });
      expect(workers.code, 'a primary whose workers cannot listen stops rather than forking for ever').to.equal(1);
      expect(workers.stderr).to.include(`(BOXAUTH_PORT) is in use`);
    });
  });

  it('the operator too: a bad value exits 2 naming it, a busy health port is named', async function () {
    const operator = async (env: Record<string, string>): Promise<{ code: number | null; stderr: string }> => {
      const child = spawn(process.execPath, [projectPath('dist', 'operator', 'main.js')], {
        env: { PATH: process.env.PATH, BOXAUTH_DATA_DIR: dir, ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      return { code, stderr };
    };
    const loud = await operator({ BOXAUTH_LOG_LEVEL: 'loud' });
    expect(loud.code).to.equal(2);
    expect(loud.stderr).to.equal(
      'boxauth-operator: BOXAUTH_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, got "loud"\n',
    );
    // Credentials for an API server no one answers at: the health port is opened before the operator asks it anything.
    const kubeconfig = path.join(dir, 'kubeconfig');
    fs.writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    await withBusyPort(async (busy) => {
      const health = await operator({
        KUBECONFIG: kubeconfig,
        DATABASE_URL: await createDatabase(),
        BOXAUTH_OPERATOR_HEALTH_HOST: '127.0.0.1',
        BOXAUTH_OPERATOR_HEALTH_PORT: String(busy),
      });
      expect(health.code).to.equal(1);
      expect(health.stderr).to.equal(
        `boxauth-operator: port ${busy} (BOXAUTH_OPERATOR_HEALTH_PORT) is in use: stop what listens there, or set BOXAUTH_OPERATOR_HEALTH_PORT to another port\n`,
      );
    });
  });

  it('the embedded PostgreSQL of a start that failed is stopped, and one adopted after a SIGKILL is stopped with its adopter', async function () {
    const pidFile = path.join(dir, 'postgres', 'postmaster.pid');
    await withBusyPort(async (busy) => {
      const failed = await start({ BOXAUTH_PORT: String(busy), BOXAUTH_METRICS_PORT: String(await freePort()) });
      expect(failed.code).to.equal(1);
      expect(fs.existsSync(pidFile), 'PostgreSQL left running after a failed start').to.equal(false);
    });
    const killed = await Box.start({ databaseUrl: 'embedded', dataDir: dir });
    killed.process!.kill('SIGKILL');
    await new Promise((resolve) => killed.process!.once('exit', resolve));
    expect(fs.existsSync(pidFile), 'a SIGKILL leaves the database up').to.equal(true);
    // The killed process's pid given out again at once, as a busy machine does: its file now names a process that runs.
    const reused = spawn('sleep', ['60'], { stdio: 'ignore' });
    const users = path.join(dir, 'postgres.users');
    fs.renameSync(path.join(users, String(killed.process!.pid)), path.join(users, String(reused.pid)));
    try {
      const adopter = await Box.start({ databaseUrl: 'embedded', dataDir: dir });
      expect(adopter.logs.join('\n')).to.include('already running');
      await adopter.stop();
      // pg_ctl stop -w has returned; the pid file may still be on its way out on a loaded machine,
      // and the adopter's last lines (what it decided) reach us after its exit.
      const gone = await eventually('the adopter to stop PostgreSQL', async () => !fs.existsSync(pidFile), 30_000).catch(() => false);
      expect(gone, `the adopter stopped it; it said last:\n${adopter.logs.slice(-15).join('\n')}`).to.equal(true);
      expect(adopter.logs.join('\n')).to.not.include('left running');
    } finally {
      reused.kill();
    }
  });

  it('the embedded PostgreSQL two processes share is stopped by the last one out, not under the other', async function () {
    // make run and make operator share .boxauth/postgres: stopping either must leave the other its database.
    const pidFile = path.join(dir, 'postgres', 'postmaster.pid');
    const answers = async (box: Box): Promise<void> => {
      expect((await box.json('GET', '/readyz')).status, box.logs.slice(-5).join('\n')).to.equal(200);
      expect(await box.rootToken()).to.be.a('string');
    };
    const boxes: Box[] = [];
    try {
      const first = await Box.start({ databaseUrl: 'embedded', dataDir: dir });
      boxes.push(first);
      const same = { databaseUrl: 'embedded', dataDir: dir, env: { BOXAUTH_ROOT_CLIENT_SECRET: first.rootSecret } };
      const adopter = await Box.start(same);
      boxes.push(adopter);
      expect(adopter.logs.join('\n')).to.include('already running');
      await adopter.stop();
      await answers(first);

      const second = await Box.start(same);
      boxes.push(second);
      await first.stop();
      expect(first.logs.join('\n')).to.include(`left running for process ${second.process!.pid}`);
      await answers(second);
      await second.stop();
    } finally {
      for (const box of boxes) await box.stop();
    }
    expect(fs.existsSync(pidFile), 'the last one out stopped it').to.equal(false);
  });
});
