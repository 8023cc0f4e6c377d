// Leader election between replicas sharing one Lease, on an API server in
// memory and a clock moved by hand: who leads, when a standby may take over,
// and when a leader must stop.
import { expect } from 'chai';
import { createLogger } from '../../../api/log.js';
import { LEASES, type KObject } from '../../../operator/kube.js';
import { LeaderElector } from '../../../operator/leader.js';
import { OperatorMetrics } from '../../../operator/metrics.js';
import { ManualClock, settle } from '../../support/clock.js';
import { FakeKube } from '../../support/fake-kube.js';

const LEASE_MS = 15_000;
const RENEW_DEADLINE_MS = 10_000;
const RETRY_MS = 2_000;

type Lease = KObject & { spec: { holderIdentity: string; leaseTransitions: number; leaseDurationSeconds: number } };

describe('operator leader election', function () {
  let clock: ManualClock;
  let kube: FakeKube;
  let electors: LeaderElector[];

  beforeEach(() => {
    clock = new ManualClock();
    kube = new FakeKube(clock);
    electors = [];
  });
  afterEach(async () => {
    for (const e of electors) await e.stop();
  });

  function replica(identity: string): LeaderElector {
    const elector = new LeaderElector(
      kube,
      {
        namespace: 'boxauth-system',
        name: 'boxauth-operator',
        identity,
        leaseDurationMs: LEASE_MS,
        renewDeadlineMs: RENEW_DEADLINE_MS,
        retryPeriodMs: RETRY_MS,
        clock,
      },
      createLogger('silent'),
      new OperatorMetrics(),
    );
    electors.push(elector);
    return elector;
  }

  const lease = (): Lease => kube.object<Lease>(LEASES, 'boxauth-system', 'boxauth-operator')!;

  /** Whether the promise has settled, without waiting for it. */
  async function settled(promise: Promise<unknown>): Promise<boolean> {
    let done = false;
    void promise.then(
      () => {
        done = true;
      },
      () => {
        done = true;
      },
    );
    await settle();
    return done;
  }

  it('takes a Lease no one holds', async function () {
    const a = replica('a');
    expect(await a.acquire()).to.equal(true);
    expect(a.isLeader).to.equal(true);
    expect(lease().spec).to.deep.include({ holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 0 });
  });

  it('stands by while the holder renews, and takes over as soon as the holder lets go on stop', async function () {
    const a = replica('a');
    await a.acquire();
    const holding = a.hold();
    const b = replica('b');
    const campaign = b.acquire();
    await clock.advance(3 * LEASE_MS);
    expect(await settled(campaign)).to.equal(false);
    expect(lease().spec.holderIdentity).to.equal('a');
    await a.stop();
    expect(await holding).to.equal('stopped');
    expect(a.isLeader).to.equal(false);
    await clock.advance(RETRY_MS * 1.2); // b's next try, not leaseDuration later
    expect(await campaign).to.equal(true);
    expect(lease().spec).to.deep.include({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  it('takes over from a holder that stopped renewing once leaseDuration has passed, measured on its own clock', async function () {
    const a = replica('a');
    await a.acquire(); // and then hangs: no renewals, no release
    const b = replica('b');
    const campaign = b.acquire();
    await clock.advance(LEASE_MS - 1);
    expect(await settled(campaign)).to.equal(false);
    await clock.advance(RETRY_MS * 1.2 + 1);
    expect(await settled(campaign)).to.equal(true);
    expect(b.isLeader).to.equal(true);
    expect(lease().spec).to.deep.include({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  it('stops leading when it could not renew for renewDeadline, before another replica may take over', async function () {
    const a = replica('a');
    await a.acquire();
    kube.failWhen((r) => r.type === LEASES); // the API server out of reach
    const holding = a.hold();
    await clock.advance(RENEW_DEADLINE_MS);
    expect(await settled(holding)).to.equal(false);
    await clock.advance(RETRY_MS);
    expect(await holding).to.equal('lost');
    expect(a.isLeader).to.equal(false);
    expect(RENEW_DEADLINE_MS + RETRY_MS).to.be.below(LEASE_MS);
  });

  it('a renewal in flight when it stops does not take the released Lease back', async function () {
    const a = replica('a');
    await a.acquire();
    const holding = a.hold();
    // The next read of the Lease (the renewal's) waits until the test lets it go.
    let letGo!: () => void;
    const gate = new Promise<void>((resolve) => (letGo = resolve));
    const get = kube.get.bind(kube);
    let gated = false;
    kube.get = async (...args: Parameters<FakeKube['get']>) => {
      if (!gated) {
        gated = true;
        await gate;
      }
      return get(...args);
    };
    await clock.advance(RETRY_MS); // the renewal starts, and waits at the gate
    expect(gated).to.equal(true);
    const stopping = a.stop();
    await settle(); // whatever stop() does without waiting for the renewal, it has done
    letGo();
    await stopping;
    expect(await holding).to.equal('stopped');
    expect(lease().spec.holderIdentity).to.equal('');
  });
});
