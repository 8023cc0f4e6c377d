// PostgreSQL crashing (`pg_ctl stop -m immediate`) under a box's load, round after round: every
// path that holds a connection is busy when it goes (group-committed token issues, DPoP proofs,
// refresh tokens, transactions closing sessions, the decision records writer, the purge job every
// second, the change feed's LISTEN). The box processes must live through each crash, answer 503
// with Retry-After while the database is gone, serve again once it is back (the change feed
// too: a revocation on one process holds at the other), and lose nothing they acknowledged.
// The database is this suite's own: the test run's shared one must not go away under other suites.
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { embeddedServerControl, startEmbeddedPostgres, type EmbeddedDatabase } from '../../api/db/embedded.js';
import { Box, basic, eventually, type JsonResponse } from '../support/box.js';
import { newKey, proof, type DpopKey } from '../support/dpop.js';

const ROUNDS = 10;
const WIKI = 'https://wiki.example';

describe('PostgreSQL crashing under load', function () {
  this.timeout(240_000);
  let dataDir: string;
  let database: EmbeddedDatabase | undefined;
  let server: Awaited<ReturnType<typeof embeddedServerControl>>;
  const boxes: Box[] = [];

  before(async function () {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-outage-'));
    database = await startEmbeddedPostgres(dataDir, () => undefined);
    server = await embeddedServerControl(dataDir);
    // The purge job every second: it holds a connection of its own while it runs.
    const env = { BOXAUTH_PURGE_INTERVAL_SECONDS: '1', BOXAUTH_SESSION_RETENTION_HOURS: '0' };
    const a = await Box.start({ databaseUrl: database.url, env });
    boxes.push(a); // before the second starts: stopped by after() even when that fails
    boxes.push(await a.startAnother(env));
    const root = await a.rootToken();
    await a.addClient(
      'worker',
      { auth: { client_credentials: { refresh_token: true, refresh_token_rotation: true } } },
      { secret: 'worker-s' },
    );
    await a.addClient('indexer', { audience: [WIKI] }, { secret: 'indexer-s', policy: false });
    // An app no policy allows anything at: each check of an identified caller is a refusal the box records.
    expect((await a.json('PUT', '/App/wiki', { urls: [WIKI], audience: WIKI }, root)).status).to.equal(201);
  });

  after(async function () {
    for (const box of boxes) await box.stop();
    await server?.start().catch(() => undefined); // stopped by a failed round: started, so that stop() can stop it
    await database?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const alive = (box: Box): boolean => box.process!.exitCode === null && box.process!.signalCode === null;
  /** `waiting`, unless the box exits first: then what it said last. */
  const whileAlive = async <T>(box: Box, waiting: Promise<T>): Promise<T> => {
    let died = (): void => undefined;
    const exited = new Promise<never>((_, reject) => {
      died = () => reject(new Error(`box ${box.url} exited:\n${box.logs.slice(-15).join('\n')}`));
    });
    if (alive(box)) box.process!.once('exit', died);
    else died();
    try {
      return await Promise.race([waiting, exited]);
    } finally {
      box.process!.off('exit', died);
    }
  };
  const unavailable = (res: JsonResponse): boolean =>
    res.status === 503 && res.body?.error === 'temporarily_unavailable' && res.headers.get('retry-after') === '5';
  const token = (box: Box, client = 'worker', secret = 'worker-s', extra: Record<string, string> = {}, headers = {}) =>
    box.form('/auth/token', { grant_type: 'client_credentials', ...extra }, { Authorization: basic(client, secret), ...headers });

  /** Loops on `box` until `stop()`: every path that holds a connection, all at once; every answer checked. */
  function load(box: Box, acknowledged: string[]) {
    let running = true;
    const wrong: string[] = [];
    let answered = 0;
    /** Anything but success or the documented 503 is a failure of the box (a 500, a cut connection). */
    const check = (what: string, res: JsonResponse, also: number[] = []): boolean => {
      answered++;
      if (res.status === 200) return true;
      if (!unavailable(res) && !also.includes(res.status)) wrong.push(`${what}: ${res.status} ${res.text.slice(0, 200)}`);
      return false;
    };
    const loop = async (step: () => Promise<void>): Promise<void> => {
      while (running && alive(box)) {
        try {
          await step();
        } catch (err) {
          wrong.push(`no answer: ${(err as Error).message}`); // the process died, or cut the request
        }
      }
    };
    let key: DpopKey | undefined;
    let refresh: string | undefined;
    const steps = [
      // Token issues, group-committed: what the box answered 200 must survive every crash.
      ...Array.from({ length: 4 }, () => async () => {
        const res = await token(box);
        if (check('token', res)) acknowledged.push(res.body.access_token as string);
      }),
      // Transactions: revocation closes a session under a lock.
      async () => {
        const issued = await token(box);
        if (!check('token to revoke', issued)) return;
        check(
          'revoke',
          await box.form('/auth/revoke', { token: issued.body.access_token as string }, { Authorization: basic('worker', 'worker-s') }),
        );
      },
      // DPoP proofs go to the replay ledger.
      async () => {
        key ??= await newKey();
        const dpop = await proof(key, { htm: 'POST', htu: `${boxes[0]!.url}/auth/token` }); // the box's base URL, at either process
        check('DPoP token', await token(box, 'worker', 'worker-s', {}, { DPoP: dpop }));
      },
      // Refresh with rotation (group-committed uses). After an answer that is not 200 the rotation may have
      // committed unseen (an unknown outcome is never a success): the next use would be a reuse, so start over.
      async () => {
        const res = refresh
          ? await box.form(
              '/auth/token',
              { grant_type: 'refresh_token', refresh_token: refresh },
              { Authorization: basic('worker', 'worker-s') },
            )
          : await token(box);
        refresh = check('refresh', res) ? (res.body.refresh_token as string) : undefined;
      },
      // The decision records writer: refusals of an identified caller are written in batches.
      async () => {
        const indexer = await token(box, 'indexer', 'indexer-s', { audience: WIKI });
        if (!check('indexer token', indexer)) return;
        const res = await box.request('GET', '/authz/forward-auth/wiki', {
          headers: {
            Authorization: `Bearer ${indexer.body.access_token as string}`,
            'X-Forwarded-Method': 'GET',
            'X-Forwarded-Proto': 'https',
            'X-Forwarded-Host': 'wiki.example',
            'X-Forwarded-Uri': '/docs/a',
          },
        });
        // A decision that cannot be made is a refusal (docs/guides/guard-your-apps.md): 503 with Retry-After, as at
        // every endpoint, telling the gateway nothing of the database (no address, no query).
        if (/127\.0\.0\.1|ECONN|:\d{4,5}\b/.test(res.text)) wrong.push(`forward-auth told of the database: ${res.text.slice(0, 200)}`);
        check('forward-auth', res, [403]);
      },
    ];
    const done = Promise.all(steps.map(loop));
    return {
      wrong,
      answered: () => answered,
      async stop(): Promise<void> {
        running = false;
        await done;
      },
    };
  }

  it('every process lives through each crash, answers 503 with Retry-After meanwhile, and serves again after', async function () {
    const acknowledged: string[] = [];
    const reconnects = (box: Box): number => box.logs.filter((l) => l.includes('"change feed reconnected"')).length;
    for (let round = 1; round <= ROUNDS; round++) {
      const at = `round ${round}`;
      const loads = boxes.map((box) => load(box, acknowledged));
      const feedBefore = boxes.map(reconnects);
      try {
        // The crash comes while every path is busy: after each box has answered a few of each.
        await eventually(`${at}: load on every box`, async () => loads.every((l) => l.answered() >= 40), 30_000, 10);
        await server.stop('immediate');
        for (const box of boxes) {
          await whileAlive(
            box,
            eventually(`${at}: 503 with Retry-After from ${box.url}`, async () => unavailable(await token(box)), 15_000),
          );
        }
      } finally {
        await Promise.all(loads.map((l) => l.stop()));
      }
      for (const [i, box] of boxes.entries()) {
        const said = `${at}: box ${i} said last:\n${box.logs.slice(-10).join('\n')}\n`;
        // A fault nothing handled stops the process (api/shutdown.ts): the box must not come to that, nor exit.
        expect(
          box.logs.filter((l) => l.includes('a fault nothing handled')),
          said,
        ).to.deep.equal([]);
        expect(alive(box), said).to.equal(true);
        expect(loads[i]!.wrong, said).to.deep.equal([]);
      }

      await server.start();
      for (const [i, box] of boxes.entries()) {
        await whileAlive(
          box,
          eventually(`${at}: box ${i} serving again`, async () => (await token(box)).status === 200, 30_000),
        );
        await whileAlive(
          box,
          eventually(`${at}: box ${i}'s change feed back`, async () => reconnects(box) > feedBefore[i]!, 30_000),
        );
      }
      // The feed carries changes again: a token used at B, revoked at A, is refused at B.
      const [a, b] = boxes as [Box, Box];
      const seen = (await token(b)).body.access_token as string;
      expect((await b.json('GET', '/Client/worker', undefined, seen)).status).to.equal(200);
      expect((await a.form('/auth/revoke', { token: seen }, { Authorization: basic('worker', 'worker-s') })).status).to.equal(200);
      await eventually(
        `${at}: the revocation at the other process`,
        async () => (await b.json('GET', '/Client/worker', undefined, seen)).status === 401,
        5_000,
        20,
      );
    }

    // The purge job was among what the crashes hit: it ran, and failed while the database was gone.
    const logged = (msg: string): boolean => boxes.some((box) => box.logs.some((l) => l.includes(`"msg":"${msg}"`)));
    expect(logged('purged old sessions') && logged('purge job failed; will retry')).to.equal(true);

    // Nothing acknowledged was lost: every token answered 200 works at either process.
    expect(acknowledged.length).to.be.greaterThan(ROUNDS * 20);
    const lost: string[] = [];
    for (let i = 0; i < acknowledged.length; i += 25) {
      await Promise.all(
        acknowledged.slice(i, i + 25).map(async (t, j) => {
          const res = await boxes[j % 2]!.json('GET', '/Client/worker', undefined, t);
          if (res.status !== 200) lost.push(`${res.status} ${res.text.slice(0, 100)}`);
        }),
      );
    }
    expect(lost, `${lost.length} of ${acknowledged.length} acknowledged tokens lost`).to.deep.equal([]);
  });

  it('SIGTERM under load with the database crashed still drains and exits 0', async function () {
    const box = boxes[1]!;
    const loaded = load(box, []);
    try {
      await eventually('load', async () => loaded.answered() >= 40, 30_000, 10);
      await server.stop('immediate');
      await eventually('a 503', async () => unavailable(await token(box)), 15_000);
    } finally {
      void loaded.stop(); // its requests meet the drain: answered, or refused a connection
    }
    const code = await box.kill('SIGTERM');
    await loaded.stop();
    await server.start();
    expect(box.logs.filter((l) => l.includes('a fault nothing handled') || l.includes('stop failed'))).to.deep.equal([]);
    expect(code).to.equal(0);
  });
});
