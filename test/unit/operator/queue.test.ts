import { expect } from 'chai';
import { WorkQueue } from '../../../operator/queue.js';
import { ManualClock, settle } from '../../support/clock.js';

describe('operator work queue', function () {
  let queue: WorkQueue;
  let clock: ManualClock;
  beforeEach(() => {
    clock = new ManualClock();
  });
  afterEach(() => queue?.shutdown());

  it('hands a key out once however often it was added while waiting', async function () {
    queue = new WorkQueue({ clock });
    const seen: string[] = [];
    queue.add('a');
    queue.add('a');
    queue.add('b');
    queue.add('a');
    queue.run(
      2,
      async (key) => {
        seen.push(key);
      },
      () => undefined,
    );
    await settle();
    expect(seen.sort()).to.deep.equal(['a', 'b']);
  });

  it("hands out a resync's background keys after every other, and moves one up when it is added again", async function () {
    queue = new WorkQueue({ clock });
    const seen: string[] = [];
    for (const key of ['r1', 'r2', 'r3']) queue.add(key, { background: true });
    queue.add('change');
    queue.add('r3'); // a change of r3 while its resync waited
    queue.add('r1', { background: true });
    expect(queue.length).to.equal(4);
    queue.run(
      1,
      async (key) => {
        seen.push(key);
      },
      () => undefined,
    );
    await settle();
    expect(seen).to.deep.equal(['change', 'r3', 'r1', 'r2']);
  });

  it('never works on one key twice at once; a key added during its work runs again afterwards', async function () {
    queue = new WorkQueue({ clock });
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    const finish: (() => void)[] = [];
    queue.run(
      4,
      async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        runs++;
        if (runs === 1) {
          queue.add('k');
          queue.add('k');
        }
        await new Promise<void>((resolve) => finish.push(resolve));
        active--;
      },
      () => undefined,
    );
    queue.add('k');
    await settle();
    expect(runs).to.equal(1); // the adds during the work wait for it, though three workers are idle
    finish.shift()!();
    await settle();
    finish.shift()!();
    await settle();
    expect(maxActive).to.equal(1);
    expect(runs).to.equal(2);
  });

  it('retries a failing key with per-key exponential backoff, and resets it after a success', async function () {
    queue = new WorkQueue({ baseDelayMs: 20, maxDelayMs: 1000, clock });
    const at: number[] = [];
    const delays: number[] = [];
    queue.run(
      1,
      async () => {
        at.push(clock.now());
        if (at.length < 4) throw new Error('not yet');
      },
      (_key, _err, retryInMs) => delays.push(retryInMs),
    );
    queue.add('k');
    await clock.advance(400);
    expect(delays).to.deep.equal([20, 40, 80]);
    expect(at).to.have.length(4);
    expect(at[3]! - at[2]!).to.be.at.least(75);
    expect(queue.failuresOf('k')).to.equal(0);
  });

  it('passes force through, and keeps it for the retry of a failed forced run', async function () {
    queue = new WorkQueue({ baseDelayMs: 10, clock });
    const forces: boolean[] = [];
    queue.run(
      1,
      async (_key, force) => {
        forces.push(force);
        if (forces.length === 2) throw new Error('fail once');
      },
      () => undefined,
    );
    queue.add('k');
    await clock.advance(20);
    queue.add('k', { force: true });
    await clock.advance(60);
    expect(forces).to.deep.equal([false, true, true]);
  });

  it('a delayed add keeps the earliest time', async function () {
    queue = new WorkQueue({ clock });
    const order: string[] = [];
    const after: number[] = [];
    const start = clock.now();
    queue.run(
      1,
      async (key) => {
        order.push(key);
        after.push(clock.now() - start);
      },
      () => undefined,
    );
    queue.addAfter('k', 200);
    queue.addAfter('k', 30);
    queue.addAfter('k', 100);
    queue.addAfter('m', 120);
    await clock.advance(260);
    // Had a later add moved k, it would run after m (timers fire in order of their due times).
    expect(order).to.deep.equal(['k', 'm']);
    expect(after).to.deep.equal([30, 120]);
  });

  it('cancels its delayed adds on shutdown', async function () {
    queue = new WorkQueue({ clock });
    queue.addAfter('k', 100);
    queue.addRateLimited('m');
    expect(clock.pending).to.equal(2);
    await queue.shutdown();
    expect(clock.pending).to.equal(0);
  });
});
