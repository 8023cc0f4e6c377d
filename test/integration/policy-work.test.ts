// Issue 81: every unit of a policy's work is counted, in every engine, and one caller's policies
// hold nobody else's request beyond a bound (docs/security.md, "Policies cannot stall the box").
//
// A seeded generator writes adversarial App policies of each engine — recursion that branches in a
// JSON Schema, matcho alternatives by the thousand, CEL with and without loops — and the inputs
// that make them work hardest (nested lists, a list of 1,800 strings: about as many values as a
// body may hold). Four callers send batches of 100 evaluations through them at once while a
// bystander asks for tokens; the test measures the bystander's latency and the box's event-loop
// delay (prom-client's nodejs_eventloop_lag_*_seconds: perf_hooks.monitorEventLoopDelay, reset
// at each scrape) while they run: its 90th percentile, since the longest delay of a window also
// holds the machine's own pauses (the process not scheduled while two cores run other work), and a
// policy that held the loop would delay every sample of a window its callers keep busy.
import { expect } from 'chai';
import { Box, basic, boxForSuite } from '../support/box.js';

/**
 * The bound docs/security.md states: another request's added latency while any one caller's
 * policies run, its 90th percentile (measured: at most 60 ms; before issue 81, the same attacks
 * held it for seconds, and CEL ranging over the list, metered but in turns of 200,000 units, 156 ms).
 */
const BYSTANDER_MS = 100;
/**
 * The event loop's delay while they run, its 90th percentile (measured 2026-11-29: 12–21 ms, the
 * longest 13–23 ms; with a decision's budget of 200,000 units and no turns of 10 ms, 69–85 ms).
 */
const LOOP_DELAY_P90_MS = 40;

const SEED = Number(process.env.BOXAUTH_POLICY_SEED ?? 20261128);

/** mulberry32: a small seeded PRNG, so that a failure can be replayed (BOXAUTH_POLICY_SEED). */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Json = Record<string, unknown>;
const pick = <T>(r: () => number, items: readonly T[]): T => items[Math.floor(r() * items.length)]!;
const between = (r: () => number, low: number, high: number): number => low + Math.floor(r() * (high - low + 1));

/** Lists nested `depth` deep: [[[…]]]. */
const nested = (depth: number): unknown => (depth === 0 ? [] : [nested(depth - 1)]);
/** `n` distinct strings, none of which the policies look for. */
const strings = (n: number): string[] => Array.from({ length: n }, (_, i) => `s${i}`);

/**
 * A schema over the evaluation's resource.properties, as an App's policy sees its request: all of
 * it applied, then a field no request has, so that it denies after its work.
 */
const overProperties = (properties: Json, defs: Json = {}): Json => ({
  ...(Object.keys(defs).length ? { $defs: defs } : {}),
  allOf: [
    { type: 'object', properties: { resource: { type: 'object', properties: { properties: { type: 'object', properties } } } } },
    { required: ['never-sent'] },
  ],
});

interface Engine {
  policies: Json[];
  /** The resource.properties that make them work hardest. */
  properties: Json;
}

/** The adversarial policies of each engine, drawn from `r`. */
const ENGINES: Record<string, (r: () => number) => Engine> = {
  'json-schema': (r) => {
    // The schema: its work doubles with each level of nesting of the input.
    const branching = {
      a: { anyOf: [{ allOf: [{ items: { $ref: '#/$defs/a' } }, { not: {} }] }, { items: { $ref: '#/$defs/a' } }] },
    };
    // A schema whose references expand to 2^k applications without recursion.
    const k = between(r, 12, 20);
    const doubling: Json = { d0: { type: 'string' } };
    for (let i = 1; i <= k; i++) doubling[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i - 1}` }, { $ref: `#/$defs/d${i - 1}` }] };
    return {
      policies: [
        { engine: 'json-schema', schema: overProperties({ x: { $ref: '#/$defs/a' } }, branching) },
        { engine: 'json-schema', schema: overProperties({ list: { items: { $ref: `#/$defs/d${k}` } } }, doubling) },
        // Every pair of 1,850 items compared.
        {
          engine: 'json-schema',
          schema: overProperties({ list: { uniqueItems: true, items: { anyOf: [{ type: 'string' }, { type: 'object' }] } } }),
        },
        {
          engine: 'json-schema',
          schema: overProperties({
            list: { items: { anyOf: Array.from({ length: between(r, 50, 200) }, (_, i) => ({ not: { const: `z${i}` } })) } },
          }),
        },
      ],
      properties: { x: nested(between(r, 22, 24)), list: strings(1800) },
    };
  },
  matcho: (r) => ({
    // Six policies, each a $one-of of 990 $contains: no pattern at all.
    policies: Array.from({ length: 6 }, (_, p) => ({
      engine: 'matcho',
      matcho: {
        resource: {
          properties: {
            list: { '$one-of': Array.from({ length: between(r, 900, 990) }, (_, i) => ({ $contains: `z${p}-${i}` })) },
          },
        },
      },
    })),
    properties: { list: strings(1800) },
  }),
  'cel, loop-free': (r) => ({
    // Twenty expressions without a loop, each cheap alone.
    policies: Array.from({ length: 20 }, (_, i) => ({
      engine: 'cel',
      cel: pick(r, [
        `"z${i}" in request.resource.properties.list`,
        `request.resource.properties.list.size() == ${i}`,
        `request.resource.type == "z${i}"`,
        `request.resource.properties.list[0] == "z${i}"`,
      ]),
    })),
    properties: { list: strings(1800) },
  }),
  'cel, ranging over the list': (r) => ({
    // Twenty expressions that range over the list: each decision stopped at its budget.
    policies: Array.from({ length: 20 }, (_, i) => ({
      engine: 'cel',
      cel: pick(r, [
        `request.resource.properties.list.exists(x, x.endsWith("z${i}"))`,
        `request.resource.properties.list.all(x, x.startsWith("s"))  && false`,
        `request.resource.properties.list.filter(x, x.contains("z${i}")).size() > 0`,
        `request.resource.properties.list.map(x, x + x).exists(y, y == "z${i}")`,
      ]),
    })),
    properties: { list: strings(1800) },
  }),
};

describe('every unit of a policy’s work is counted, in every engine (issue 81)', function () {
  this.timeout(240_000);
  let box: Box;
  let root: string;
  let pep: string;
  let bystander: { secret: string };
  const r = random(SEED);

  boxForSuite((b, t) => ([box, root] = [b, t]));

  before(async function () {
    const asker = await box.addClient('work-pep', {}, { policy: false });
    const asks = await box.json(
      'PUT',
      '/AccessPolicy/work-pep-asks',
      { engine: 'cel', link: [{ id: 'work-pep', resourceType: 'Client' }], cel: 'request.uri.startsWith("/apps/")' },
      root,
    );
    expect(asks.status, asks.text).to.equal(201);
    pep = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('work-pep', asker.secret) })).body
      .access_token;
    bystander = await box.addClient('work-bystander', {}, { policy: false });
  });

  /** One token request of the bystander: its latency in ms. */
  async function token(): Promise<number> {
    const started = performance.now();
    const res = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials' },
      { Authorization: basic('work-bystander', bystander.secret) },
    );
    expect(res.status, res.text).to.equal(200);
    return performance.now() - started;
  }

  /** The box's event-loop delay since the last scrape, in ms: its 90th percentile and its longest. */
  async function loopDelay(): Promise<{ p90: number; max: number }> {
    const text = await box.metrics();
    const read = (name: string): number => {
      const found = new RegExp(`^nodejs_eventloop_lag_${name}_seconds(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(text);
      expect(found, `nodejs_eventloop_lag_${name}_seconds`).to.not.equal(null);
      return Number(found![1]) * 1000;
    };
    return { p90: read('p90'), max: read('max') };
  }

  for (const [name, generate] of Object.entries(ENGINES)) {
    it(`${name}: its policies are accepted, deny within their budget, and hold a bystander under ${BYSTANDER_MS} ms`, async function () {
      const app = `work-${name.replace(/[^a-z]+/g, '-')}`;
      const { policies, properties } = generate(r);
      expect((await box.json('PUT', `/App/${app}`, { urls: [`https://${app}.example`] }, root)).status).to.equal(201);
      for (const [i, policy] of policies.entries()) {
        const put = await box.json('PUT', `/AccessPolicy/${app}-${i}`, { app, ...policy }, root);
        expect(put.status, `${app}-${i}: ${put.text.slice(0, 300)}`).to.be.oneOf([201, 422]);
      }
      const batch = {
        subject: { type: 'client', id: 'work-pep' },
        action: { name: 'view' },
        resource: { type: 'doc', id: 'd1', properties },
        // Each evaluation takes the batch's resource (AuthZEN §7.1's defaults): one copy in the body.
        evaluations: Array.from({ length: 100 }, () => ({})),
      };
      // One batch alone: answered, every evaluation denied (the policies allow nothing it sends).
      const one = await box.json('POST', `/apps/${app}/access/v1/evaluations`, batch, pep);
      expect(one.status, one.text.slice(0, 300)).to.equal(200);
      expect(one.body.evaluations.map((e: { decision: boolean }) => e.decision)).to.deep.equal(Array(100).fill(false));

      const quiet = [await token(), await token(), await token()];
      await loopDelay(); // resets the histogram
      let attacking = true;
      let sent = 0;
      const attacker = async (): Promise<void> => {
        while (attacking) {
          const res = await box.json('POST', `/apps/${app}/access/v1/evaluations`, batch, pep);
          expect(res.status).to.equal(200);
          sent += 1;
        }
      };
      const attackers = [attacker(), attacker(), attacker(), attacker()];
      const under: number[] = [];
      let delay: { p90: number; max: number };
      try {
        await new Promise((resolve) => setTimeout(resolve, 300));
        for (let i = 0; i < 12; i++) under.push(await token());
        delay = await loopDelay();
      } finally {
        attacking = false;
        await Promise.all(attackers);
      }
      const shown = `${name}: quiet ${quiet.map(Math.round).join(' ')} ms; under ${sent} batches ${under.map(Math.round).join(' ')} ms; loop delay p90 ${Math.round(delay.p90)} ms, max ${Math.round(delay.max)} ms`;
      if (process.env.BOXAUTH_SHOW_LATENCY) console.log(`      ${shown}`);
      expect(sent, shown).to.be.above(1);
      // The 90th percentile of the bystander's latencies: a single one can meet the machine's own
      // pauses (another process on the two cores, a checkpoint), which the event loop's delay leaves out.
      const typical = [...quiet].sort((a, b) => a - b)[1]!;
      const p90 = [...under].sort((a, b) => a - b)[Math.ceil(under.length * 0.9) - 1]!;
      expect(p90, shown).to.be.below(typical + BYSTANDER_MS);
      expect(delay.p90, shown).to.be.below(LOOP_DELAY_P90_MS);
    });
  }
});
