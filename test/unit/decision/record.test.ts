import { expect } from 'chai';
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
