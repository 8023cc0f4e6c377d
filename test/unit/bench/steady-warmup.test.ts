// make bench-peers warms each target until its rate stops rising (test/bench/measure.ts,
// steadyWarmup), so that a JIT still compiling (Keycloak's HotSpot) is not measured cold: the
// windows it drives, and when it stops.
import { expect } from 'chai';
import { STEADY, steadyWarmup } from '../../bench/measure.js';
import type { LoadResult } from '../../bench/load.js';

/** A target whose windows run at `rates` in turn (the last one after that); records the seconds asked. */
function target(rates: number[]): { window: (seconds: number) => Promise<LoadResult>; asked: number[] } {
  const asked: number[] = [];
  const window = async (seconds: number): Promise<LoadResult> => {
    const rps = rates[Math.min(asked.length, rates.length - 1)]!;
    asked.push(seconds);
    return { requests: rps * seconds, seconds, rps, p50Ms: 1, p90Ms: 1, p99Ms: 1, maxMs: 1, failures: 0 };
  };
  return { window, asked };
}

describe('warming a target until its rate is steady', function () {
  it('drives windows while the rate rises, and stops at the first no more than 5 % above the best before it', async function () {
    const t = target([267, 376, 487, 558, 591, 555, 600]);
    const warmed = await steadyWarmup(t.window);
    expect(warmed.rates).to.deep.equal([267, 376, 487, 558, 591, 555]);
    expect(warmed.seconds).to.equal(6 * STEADY.windowSeconds);
    expect(warmed.requests).to.equal((267 + 376 + 487 + 558 + 591 + 555) * STEADY.windowSeconds);
    expect(t.asked.every((s) => s === STEADY.windowSeconds)).to.equal(true);
  });

  it('takes two windows at least, even when the first is the fastest', async function () {
    expect((await steadyWarmup(target([5_000, 4_000]).window)).rates).to.deep.equal([5_000, 4_000]);
    expect((await steadyWarmup(target([5_000, 5_200]).window)).rates, 'within 5 %').to.deep.equal([5_000, 5_200]);
  });

  it('stops at its longest when the rate never settles', async function () {
    const rising = Array.from({ length: 100 }, (_, i) => 100 * 1.1 ** i);
    const warmed = await steadyWarmup(target(rising).window);
    expect(warmed.seconds).to.equal(STEADY.maxSeconds);
    expect(warmed.rates).to.have.length(STEADY.maxSeconds / STEADY.windowSeconds);
  });
});
