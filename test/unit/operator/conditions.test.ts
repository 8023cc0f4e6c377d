import { expect } from 'chai';
import { setCondition } from '../../../operator/conditions.js';

describe('operator conditions', function () {
  const t0 = new Date('2026-01-01T00:00:00.123Z');
  const t1 = new Date('2026-01-01T00:05:00Z');

  it('keeps lastTransitionTime while the status stays, even when reason and message change', function () {
    const first = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'BoxNotReady', message: 'wait' }, 1, t0);
    expect(first[0]!.lastTransitionTime).to.equal('2026-01-01T00:00:00Z');
    const second = setCondition(first, { type: 'Ready', status: 'False', reason: 'SecretNotFound', message: 'create it' }, 2, t1);
    expect(second[0]).to.deep.include({ reason: 'SecretNotFound', observedGeneration: 2, lastTransitionTime: '2026-01-01T00:00:00Z' });
  });

  it('moves lastTransitionTime when the status flips, and leaves other conditions alone', function () {
    const list = setCondition(
      setCondition(undefined, { type: 'Available', status: 'True', reason: 'A', message: '' }, 1, t0),
      { type: 'Ready', status: 'False', reason: 'X', message: '' },
      1,
      t0,
    );
    const flipped = setCondition(list, { type: 'Ready', status: 'True', reason: 'Reconciled', message: 'ok' }, 1, t1);
    expect(flipped.find((c) => c.type === 'Ready')!.lastTransitionTime).to.equal('2026-01-01T00:05:00Z');
    expect(flipped.find((c) => c.type === 'Available')).to.deep.equal(list.find((c) => c.type === 'Available'));
  });
});
