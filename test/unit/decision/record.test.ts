import { expect } from 'chai';
import type { Audit, AuditEvent } from '../../../api/audit.js';
import type { Pool } from '../../../api/db/pool.js';
import type { Decision } from '../../../api/decision/engine.js';
import { Decisions } from '../../../api/decision/record.js';
import { NOBODY } from '../../../api/decision/request.js';
import { createLogger } from '../../../api/log.js';
import { Metrics } from '../../../api/metrics.js';
import { PerSecondBudget } from '../../../api/per-second-budget.js';

describe('the budget of kept refusals', function () {
  it('lets at most its number through in one second, and as many again in the next', function () {
    const budget = new PerSecondBudget(3);
    const t = 1_700_000_000_000;
    expect([0, 10, 20, 30, 999].map((ms) => budget.take(t + ms))).to.deep.equal(['ok', 'ok', 'ok', 'rate', 'rate']);
    expect([1000, 1001, 1002, 1003].map((ms) => budget.take(t + ms))).to.deep.equal(['ok', 'ok', 'ok', 'rate']);
    // A second with nothing spent leaves nothing over for the next.
    expect([3000, 3001, 3002, 3003].map((ms) => budget.take(t + ms))).to.deep.equal(['ok', 'ok', 'ok', 'rate']);
  });

  it("gives each caller its own share: one caller's flood leaves the rest of the second to the others", function () {
    const budget = new PerSecondBudget(5, 2);
    const t = 1_700_000_000_000;
    expect(['noisy', 'noisy', 'noisy', 'noisy'].map((k, i) => budget.take(t + i, k))).to.deep.equal(['ok', 'ok', 'share', 'share']);
    expect(['quiet', 'quiet', 'other', 'third'].map((k, i) => budget.take(t + 10 + i, k))).to.deep.equal(['ok', 'ok', 'ok', 'rate']);
    // The next second, every share is whole again.
    expect(budget.take(t + 1000, 'noisy')).to.equal('ok');
    expect(budget.take(t + 1001, 'quiet')).to.equal('ok');
  });
});

describe('the audit lines of decisions, with BOXAUTH_AUDIT_ALLOWED_DECISION_SAMPLE', function () {
  const decision = (allowed: boolean, n: number): Decision => ({
    id: `d-${n}`,
    app: 'wiki',
    door: 'grpc',
    allowed,
    status: allowed ? 200 : 403,
    reason: allowed ? 'allowed' : 'no-policy',
    description: allowed ? 'allowed' : 'no policy allows it',
    upstream: {},
    outcomes: [],
    // no request: a refusal is then not kept for explaining, so no database is asked
    request: null,
    caller: { ...NOBODY, client: 'reader' },
  });

  /** The audit events a Decisions with `sample` writes of `decisions`, and its metrics' count. */
  async function logged(sample: number, decisions: Decision[]): Promise<{ lines: AuditEvent[]; counted: number }> {
    const lines: AuditEvent[] = [];
    const audit = { record: (e: AuditEvent) => lines.push(e), logOnly: (e: AuditEvent) => lines.push(e) } as unknown as Audit;
    const metrics = new Metrics('test');
    const record = new Decisions({} as Pool, audit, metrics, createLogger('silent'), sample);
    for (const d of decisions) record.record(d, 0.001);
    const counted = (await metrics.decisions.get()).values.reduce((sum, v) => sum + v.value, 0);
    return { lines, counted };
  }

  it('logs every decision by default', async function () {
    const { lines, counted } = await logged(1, [decision(true, 1), decision(true, 2), decision(false, 3)]);
    expect(lines.map((e) => e.event === 'decision' && [e.id, e.sampled])).to.deep.equal([
      ['d-1', undefined],
      ['d-2', undefined],
      ['d-3', undefined],
    ]);
    expect(counted).to.equal(3);
  });

  it('logs one allowed decision in N, saying so, and every refusal; the metric counts them all', async function () {
    // 10 allowed, with 5 refusals among them
    const decisions = [...Array(15).keys()].map((n) => decision(n % 3 !== 2, n));
    const { lines, counted } = await logged(4, decisions);
    const allowed = lines.filter((e) => e.event === 'decision' && e.allowed);
    const refused = lines.filter((e) => e.event === 'decision' && !e.allowed);
    expect(refused.map((e) => e.event === 'decision' && [e.id, e.sampled])).to.deep.equal(
      [2, 5, 8, 11, 14].map((n) => [`d-${n}`, undefined]),
    );
    // the 4th and 8th allowed ones (d-4 and d-10), each standing for 4
    expect(allowed.map((e) => e.event === 'decision' && [e.id, e.sampled])).to.deep.equal([
      ['d-4', 4],
      ['d-10', 4],
    ]);
    expect(counted).to.equal(15);
  });
});
