// The periodic resync, a slice of the namespaces each second (operator/resync.ts): every namespace
// once a period, its objects together, and no second with many more boxes than the average.
import { expect } from 'chai';
import { ResyncSchedule } from '../../../operator/resync.js';

const namespaces = Array.from({ length: 1000 }, (_, i) => `scale-${String(i).padStart(4, '0')}`);

describe('operator resync schedule', function () {
  it('takes each namespace in exactly one tick of a period, the same one each period', function () {
    const schedule = new ResyncSchedule(60_000);
    expect(schedule.slices).to.equal(60);
    expect(schedule.intervalMs).to.equal(1000);
    const ticksOf = new Map<string, number[]>();
    for (let tick = 0; tick < 120; tick++) {
      const { first, inSlice } = schedule.next();
      expect(first, `tick ${tick}`).to.equal(tick % 60 === 0);
      for (const ns of namespaces) if (inSlice(ns)) ticksOf.set(ns, [...(ticksOf.get(ns) ?? []), tick]);
    }
    for (const ns of namespaces) {
      const ticks = ticksOf.get(ns)!;
      expect(ticks, ns).to.have.length(2);
      expect(ticks[1]! - ticks[0]!, ns).to.equal(60);
    }
  });

  it('spreads a thousand namespaces over the ticks: none takes more than twice the average', function () {
    const schedule = new ResyncSchedule(60_000);
    const perTick = Array.from({ length: 60 }, () => namespaces.filter(schedule.next().inSlice).length);
    expect(Math.max(...perTick)).to.be.at.most((2 * namespaces.length) / 60);
  });

  it('a period of a tick or less is one slice: everything each period', function () {
    for (const periodMs of [1000, 400]) {
      const schedule = new ResyncSchedule(periodMs);
      expect(schedule.slices).to.equal(1);
      expect(schedule.intervalMs).to.equal(periodMs);
      const { first, inSlice } = schedule.next();
      expect(first).to.equal(true);
      expect(namespaces.every(inSlice)).to.equal(true);
    }
  });
});
