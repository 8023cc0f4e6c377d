import { expect } from 'chai';
import { PerSecondBudget } from '../../../api/decision/record.js';

describe('the budget of kept refusals', function () {
  it('lets at most its number through in one second, and as many again in the next', function () {
    const budget = new PerSecondBudget(3);
    const t = 1_700_000_000_000;
    expect([0, 10, 20, 30, 999].map((ms) => budget.take(t + ms))).to.deep.equal([true, true, true, false, false]);
    expect([1000, 1001, 1002, 1003].map((ms) => budget.take(t + ms))).to.deep.equal([true, true, true, false]);
    // A second with nothing spent leaves nothing over for the next.
    expect([3000, 3001, 3002, 3003].map((ms) => budget.take(t + ms))).to.deep.equal([true, true, true, false]);
  });
});
