// A host prepares the boxes that appear in its registry while it serves the others
// (docs/kubernetes/hosted-boxes.md): each preparation makes the box's signing keys, an RSA one
// among them, and none of that may hold the event loop that answers box A. The host's own
// metrics say how long its event loop was held (nodejs_eventloop_lag_max_seconds, the longest
// since the last scrape); A's token requests, asked all along, say what its users saw.
import { expect } from 'chai';
import { basic, type Box } from '../support/box.js';
import { Host } from '../support/host.js';
import { createDatabase } from '../support/postgres.js';

/** The bound docs/kubernetes/hosted-boxes.md states: the longest the host's event loop is held while it prepares boxes. */
const LOOP_HELD_MS = 300;
/** A's token requests slower than this while boxes are prepared: at most SLOW_ALLOWED of them (a machine shared with other work). */
const SLOW_MS = 300;
const SLOW_ALLOWED = 2;
const NEW_BOXES = 8;

/** The host's own (box="") longest event-loop delay since the last scrape, in ms. */
const loopHeldMs = (metrics: string): number =>
  1000 * Number(/^nodejs_eventloop_lag_max_seconds\{[^}]*box=""[^}]*\} (\S+)$/m.exec(metrics)?.[1] ?? NaN);

describe('a host preparing boxes keeps answering the boxes it serves', function () {
  this.timeout(300_000);
  let host: Host;
  let a: Box;
  let secret: string;

  before(async function () {
    host = await Host.start([{ team: 'team-a' }]);
    await host.ready('team-a');
    a = host.box('team-a');
    secret = (await a.addClient('svc', {})).secret;
  });
  after(async function () {
    await host?.stop();
  });

  /** One token of A's service: its answer time in ms; it must succeed. */
  async function aToken(): Promise<number> {
    const started = performance.now();
    const res = await a.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('svc', secret) });
    expect(res.status, res.text).to.equal(200);
    return performance.now() - started;
  }

  it(`${NEW_BOXES} boxes signing with RS256 prepared at once: the loop is held < ${LOOP_HELD_MS} ms, A's tokens all answered`, async function () {
    await aToken();
    const teams = Array.from({ length: NEW_BOXES }, (_, i) => `team-rs${i}`);
    const databases = await Promise.all(teams.map(() => createDatabase()));
    for (const [i, team] of teams.entries())
      await host.add({ team, databaseUrl: databases[i], env: { BOXAUTH_JWT_ALG: 'RS256' } }, { write: false });
    await host.metrics(); // the longest delay counts from here
    host.writeRegistry();
    let preparing = true;
    const prepared = Promise.all(teams.map((team) => host.ready(team, 240_000))).finally(() => (preparing = false));
    const took: number[] = [];
    while (preparing) took.push(await aToken());
    await prepared;
    const held = loopHeldMs(await host.metrics());
    const slow = took.filter((ms) => ms > SLOW_MS);
    const shown = `loop held at most ${Math.round(held)} ms; A's ${took.length} tokens, slowest ${took
      .sort((x, y) => y - x)
      .slice(0, 5)
      .map(Math.round)
      .join(' ')} ms`;
    if (process.env.BOXAUTH_SHOW_LATENCY) console.log(`      ${shown}`);
    expect(took.length, shown).to.be.above(NEW_BOXES);
    expect(held, shown).to.be.below(LOOP_HELD_MS);
    expect(slow.length, shown).to.be.at.most(SLOW_ALLOWED);
    // The new boxes sign their tokens with their RS256 keys.
    const token = await host.box(teams[0]!).rootToken();
    expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')).alg).to.equal('RS256');
  });
});
