// The holders of refresh tokens a process remembers: found by the token's digest,
// forgotten when their session changes, and never more than a bounded number.
import { EventEmitter } from 'node:events';
import { expect } from 'chai';
import { RefreshHolders } from '../../../api/cache/refresh-holders.js';
import { tokenHash } from '../../../api/credentials/tokens.js';
import type { ChangeFeed } from '../../../api/db/notify.js';
import type { SessionRow } from '../../../api/store/sessions.js';
import { sessionRow } from '../../support/session-row.js';

class FakeFeed extends EventEmitter {
  onChange(_table: string, handler: (change: { id: string }) => void): void {
    this.on('change', handler);
  }
  onReset(handler: () => void): void {
    this.on('reset', handler);
  }
}

const holder = (n: number): SessionRow => sessionRow({ id: `session-${n}`, refreshTokenHash: tokenHash(`refresh-${n}`) });

describe('refresh holders', function () {
  let feed: FakeFeed;
  beforeEach(function () {
    feed = new FakeFeed();
  });
  const holders = (): RefreshHolders => new RefreshHolders(feed as unknown as ChangeFeed);

  it('finds a holder by its refresh token, until its session changes', function () {
    const h = holders();
    h.remember(holder(1));
    expect(h.get(tokenHash('refresh-1'))?.id).to.equal('session-1');
    feed.emit('change', { id: 'session-1' });
    expect(h.get(tokenHash('refresh-1'))).to.equal(undefined);
  });

  it('holds at most 10,000 holders (about 17 MB), the oldest going first', function () {
    // Each holder costs about 1.7 KB of heap: 100,000 of them took a worker past its 200 MB.
    const h = holders();
    for (let n = 1; n <= 10_001; n++) h.remember(holder(n));
    expect(h.get(tokenHash('refresh-1')), 'the oldest').to.equal(undefined);
    expect(h.get(tokenHash('refresh-2'))?.id).to.equal('session-2');
    expect(h.get(tokenHash('refresh-10001'))?.id).to.equal('session-10001');
  });

  it('remembers a holder pushed out again when it is read again', function () {
    const h = holders();
    for (let n = 1; n <= 10_001; n++) h.remember(holder(n));
    h.remember(holder(1));
    expect(h.get(tokenHash('refresh-1'))?.id).to.equal('session-1');
    expect(h.get(tokenHash('refresh-2')), 'now the oldest').to.equal(undefined);
  });
});
