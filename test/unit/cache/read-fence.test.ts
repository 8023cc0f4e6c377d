// The read fence against a change feed and a pool in memory: when it passes, when it
// gives up (its readers then read the database), and that giving up never ends the process.
import { EventEmitter } from 'node:events';
import { expect } from 'chai';
import { ReadFence } from '../../../api/cache/read-fence.js';
import type { ChangeFeed } from '../../../api/db/notify.js';
import type { Pool } from '../../../api/db/pool.js';

class FakeFeed extends EventEmitter {
  connected = true;
  channel = 'boxauth_0123';
  onFence(handler: (token: string) => void): void {
    this.on('fence', handler);
  }
  onReset(handler: () => void): void {
    this.on('reset', handler);
  }
}

/** A pool whose pg_notify is answered when the test says, and whose fences are heard back only if it says so. */
function fakePool(feed: FakeFeed, echo: boolean): { pool: Pool; sent: string[] } {
  const sent: string[] = [];
  const query = async (q: { values: [string, string] }): Promise<void> => {
    const { fence } = JSON.parse(q.values[1]) as { fence: string };
    sent.push(fence);
    if (!echo) return new Promise<void>(() => undefined); // waits for a connection forever
    setImmediate(() => feed.emit('fence', fence));
  };
  return { pool: { query } as unknown as Pool, sent };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** How a fence stands for its reader: 'pending', 'passed' or the rejection's message (a handler attached at once). */
function track(p: Promise<void>): () => Promise<string> {
  let state = 'pending';
  p.then(
    () => (state = 'passed'),
    (err: Error) => (state = err.message),
  );
  return async () => {
    await tick();
    await tick();
    return state;
  };
}

describe('read fence', function () {
  let unhandled: unknown[];
  const onUnhandled = (reason: unknown): void => {
    unhandled.push(reason);
  };
  beforeEach(function () {
    unhandled = [];
    process.on('unhandledRejection', onUnhandled);
  });
  afterEach(function () {
    process.off('unhandledRejection', onUnhandled);
  });

  it('passes once its own notification comes back; readers arriving together share one', async function () {
    const feed = new FakeFeed();
    const { pool, sent } = fakePool(feed, true);
    const fence = new ReadFence(pool, feed as unknown as ChangeFeed);
    await Promise.all([fence.pass(), fence.pass(), fence.pass()]);
    expect(sent).to.have.length(1);
    feed.emit('fence', 'someone else:1'); // another process's fence passes nothing here
    await fence.pass();
    expect(sent).to.have.length(2);
  });

  it('is given up at once when the change feed is lost: its readers read the database instead of waiting', async function () {
    const feed = new FakeFeed();
    const fence = new ReadFence(fakePool(feed, false).pool, feed as unknown as ChangeFeed);
    const reading = track(fence.pass());
    expect(await reading()).to.equal('pending');
    feed.emit('reset');
    expect(await reading()).to.equal('the change feed was lost');
    feed.connected = false;
    expect(await track(fence.pass())()).to.equal('the change feed is not connected');
    expect(unhandled).to.deep.equal([]);
  });

  it('not heard back in time, it fails its readers, never the process, even while its query still waits', async function () {
    const feed = new FakeFeed();
    const fence = new ReadFence(fakePool(feed, false).pool, feed as unknown as ChangeFeed, 1);
    const reading = track(fence.pass());
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await reading()).to.equal('the fence did not come back in time');
    expect(unhandled).to.deep.equal([]);
  });
});
