// The policies' budget (api/policy/budget.ts): a decision's, a request's, and the turns decisions
// take so that no stretch of the event loop runs more policies than a turn's budget.
import { expect } from 'chai';
import { charge, DecisionLine, EVALUATION_LIMITS, inTurn, metered, withBudget, withDecision } from '../../../api/policy/budget.js';

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
    // a and b (120,000 units) ran at once (b, unless the machine paused this process for a turn's
    // 10 ms between them); c waits for a later turn of the event loop, after what is waiting for I/O.
    expect(ran[0]).to.equal('a');
    expect(ran).to.not.include('c');
    let io = false;
    setImmediate(() => (io = ran.length < 5));
    expect(await Promise.all(decided)).to.deep.equal([undefined, undefined, undefined, undefined, undefined]);
    expect(ran).to.deep.equal(['a', 'b', 'c', 'd', 'e']);
    expect(io, 'other work ran before the last decisions').to.equal(true);
  });

  it('ends a turn after turnMs of decisions, however few units they spend: other work runs between', async function () {
    await new Promise((resolve) => setImmediate(resolve));
    const busy = (ms: number) => () => {
      const until = performance.now() + ms;
      while (performance.now() < until);
    };
    const ran: number[] = [];
    const decided = Array.from({ length: 6 }, (_, i) => inTurn(() => (ran.push(i), busy(EVALUATION_LIMITS.turnMs / 2 + 1)())));
    // Each takes just over half a turn and spends no unit: at most the first two run now (one, if the
    // machine paused this process between them), the third waits.
    expect(ran.length).to.be.within(1, 2);
    let between = 0;
    const io = setInterval(() => (between += 1), 0);
    await Promise.all(decided);
    clearInterval(io);
    expect(ran).to.deep.equal([0, 1, 2, 3, 4, 5]);
    expect(between, 'timers ran between the turns').to.be.above(0);
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

  it("boxes take turns: one box's decisions at their budget hold another box's next one by one of their own", async function () {
    await new Promise((resolve) => setImmediate(resolve));
    const [flooding, other] = [new DecisionLine(), new DecisionLine()];
    const ran: string[] = [];
    const at = (line: DecisionLine, name: string): Promise<unknown> =>
      inTurn(() => (ran.push(name), decision(EVALUATION_LIMITS.perDecision)()), line);
    // Each spends a whole turn's budget: one decision a turn. The flood's eight wait, then the other box's two.
    const decided = [...Array.from({ length: 8 }, (_, i) => at(flooding, `a${i}`)), at(other, 'b0'), at(other, 'b1')];
    await Promise.all(decided);
    expect(ran.slice(0, 5)).to.deep.equal(['a0', 'a1', 'b0', 'a2', 'b1']);
  });
});
