// The policies' budget (api/policy/budget.ts): a decision's, a request's, and the turns decisions
// take so that no stretch of the event loop runs more policies than a turn's budget.
import { expect } from 'chai';
import { charge, EVALUATION_LIMITS, inTurn, metered, withBudget, withDecision } from '../../../api/policy/budget.js';

/** A decision whose one policy spends `units`. */
const decision = (units: number) => () => withDecision(() => metered(() => charge(units)).stopped);

describe('policy budgets', function () {
  it("stops a policy past what its decision has left, naming the decision's budget", function () {
    expect(withDecision(() => [metered(() => charge(60_000)).stopped, metered(() => charge(60_000)).stopped])).to.deep.equal([
      undefined,
      'decision',
    ]);
    // Outside a decision (a claim), the policy's own limit only.
    expect(metered(() => charge(EVALUATION_LIMITS.perDecision * 2)).stopped).to.equal(undefined);
    expect(metered(() => charge(EVALUATION_LIMITS.perPolicy + 1)).stopped).to.equal('policy');
  });

  it("stops the decisions of a request past the request's budget", function () {
    const stops = withBudget(() => Array.from({ length: 5 }, () => decision(90_000)()), 300_000);
    expect(stops).to.deep.equal([undefined, undefined, undefined, 'request', 'request']);
  });

  it('runs decisions in this turn of the event loop until their policies spent a decision’s budget, the next ones in later turns', async function () {
    // Let the turns of what ran before end.
    await new Promise((resolve) => setImmediate(resolve));
    const ran: string[] = [];
    const decided = ['a', 'b', 'c', 'd', 'e'].map((name) =>
      inTurn(() => {
        ran.push(name);
        return decision(60_000)();
      }),
    );
    // a and b (120,000 units) ran at once; c waits for a later turn of the event loop, after what is waiting for I/O.
    expect(ran).to.deep.equal(['a', 'b']);
    let io = false;
    setImmediate(() => (io = ran.length < 5));
    expect(await Promise.all(decided)).to.deep.equal([undefined, undefined, undefined, undefined, undefined]);
    expect(ran).to.deep.equal(['a', 'b', 'c', 'd', 'e']);
    expect(io, 'other work ran before the last decisions').to.equal(true);
  });

  it("a decision that throws rejects its turn's promise, and the turns go on", async function () {
    await inTurn(decision(EVALUATION_LIMITS.perDecision));
    const failing = inTurn(() => {
      throw new Error('broken');
    });
    const after = inTurn(decision(10));
    const error = await failing.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).to.be.instanceOf(Error).with.property('message', 'broken');
    expect(await after).to.equal(undefined);
  });
});
