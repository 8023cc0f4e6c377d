// Leader election on a coordination.k8s.io/v1 Lease, as client-go's
// leaderelection does it: a replica takes the Lease when it is free or when its
// holder has not renewed it for leaseDuration (measured on this replica's clock,
// from when it last saw the record change, so clocks need not agree); the leader
// renews every retryPeriod and gives up when it could not renew for
// renewDeadline. Updates carry the resourceVersion, so two replicas can never
// both win. On a graceful stop the leader releases the Lease, so a standby takes
// over at once instead of after leaseDuration.
import { errorMessage, type Logger } from '../api/public.js';
import { kubeMicroTime, sleep, systemClock, type Clock } from './clock.js';
import { isConflict, isNotFound, LEASES, type KObject, type Kube } from './kube.js';
import type { OperatorMetrics } from './metrics.js';

export interface LeaderOptions {
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  clock?: Clock;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

type Lease = KObject & { spec?: LeaseSpec };

export class LeaderElector {
  private observed = '';
  private observedAt = 0;
  private leading = false;
  private readonly stopped = new AbortController();
  private readonly clock: Clock;
  /** The Lease request in flight: stop() waits for it, so a renewal read before the release cannot take the Lease back after it. */
  private inFlight: Promise<boolean> = Promise.resolve(false);

  constructor(
    private readonly kube: Kube,
    private readonly opts: LeaderOptions,
    private readonly log: Logger,
    private readonly metrics: OperatorMetrics,
  ) {
    this.clock = opts.clock ?? systemClock;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Waits until this replica holds the Lease (true), or until stop() (false). */
  async acquire(): Promise<boolean> {
    let waitingLogged = false;
    while (!this.stopped.signal.aborted) {
      if (await this.attempt()) {
        this.leading = true;
        this.metrics.leader.set(1);
        this.log.info({ lease: `${this.opts.namespace}/${this.opts.name}`, identity: this.opts.identity }, 'became the leader');
        return true;
      }
      const holder = this.currentHolder();
      if (!waitingLogged && holder && holder !== this.opts.identity) {
        this.log.info({ lease: `${this.opts.namespace}/${this.opts.name}`, holder }, 'standing by: another replica holds the leader Lease');
        waitingLogged = true;
      }
      await sleep(this.clock, this.opts.retryPeriodMs * (1 + Math.random() * 0.2), this.stopped.signal);
    }
    return false;
  }

  /**
   * Renews the Lease every retryPeriod until stop() ('stopped'), or until it
   * could not be renewed for renewDeadline ('lost'): the leader must then stop
   * acting at once, before leaseDuration lets another replica take over.
   */
  async hold(): Promise<'lost' | 'stopped'> {
    let lastRenew = this.clock.now();
    while (!this.stopped.signal.aborted) {
      await sleep(this.clock, this.opts.retryPeriodMs, this.stopped.signal);
      if (this.stopped.signal.aborted) break;
      if (await this.attempt()) {
        lastRenew = this.clock.now();
      } else if (this.clock.now() - lastRenew > this.opts.renewDeadlineMs) {
        this.leading = false;
        this.metrics.leader.set(0);
        this.log.error({ lease: `${this.opts.namespace}/${this.opts.name}` }, 'lost the leader Lease (could not renew it in time)');
        return 'lost';
      }
    }
    return 'stopped';
  }

  private currentHolder(): string {
    return this.observed.split('\u0000')[0] ?? '';
  }

  private attempt(): Promise<boolean> {
    this.inFlight = this.tryAcquireOrRenew();
    return this.inFlight;
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity, leaseDurationMs } = this.opts;
    const now = new Date(this.clock.now());
    const spec: LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: kubeMicroTime(now),
      renewTime: kubeMicroTime(now),
      leaseTransitions: 0,
    };
    try {
      let lease: Lease;
      try {
        lease = await this.kube.get<Lease>(LEASES, namespace, name);
      } catch (err) {
        if (!isNotFound(err)) throw err;
        await this.kube.create(LEASES, namespace, { metadata: { name, namespace }, spec });
        return true;
      }
      const current = lease.spec ?? {};
      const record = `${current.holderIdentity ?? ''}\u0000${current.renewTime ?? ''}`;
      if (record !== this.observed) {
        this.observed = record;
        this.observedAt = now.getTime();
      }
      const holder = current.holderIdentity ?? '';
      const expiresMs = (current.leaseDurationSeconds ?? 0) * 1000;
      if (holder && holder !== identity && this.observedAt + expiresMs > now.getTime()) return false;
      if (holder === identity) {
        spec.acquireTime = current.acquireTime ?? spec.acquireTime;
        spec.leaseTransitions = current.leaseTransitions ?? 0;
      } else {
        spec.leaseTransitions = (current.leaseTransitions ?? 0) + 1;
      }
      await this.kube.replace(LEASES, namespace, name, { ...lease, spec });
      this.observed = `${identity}\u0000${spec.renewTime}`;
      this.observedAt = now.getTime();
      return true;
    } catch (err) {
      if (!isConflict(err)) this.log.warn({ err: errorMessage(err) }, 'leader Lease: request failed');
      return false;
    }
  }

  /**
   * Stops campaigning; a leader releases the Lease so a standby can take it at
   * once. It waits for the request in flight first: a renewal (or a standby's
   * take-over) that read the Lease before the release would otherwise write it
   * back to this replica after it, and every standby would wait leaseDuration.
   */
  async stop(): Promise<void> {
    this.stopped.abort();
    await this.inFlight;
    this.leading = false;
    this.metrics.leader.set(0);
    for (let tries = 0; tries < 3; tries++) {
      try {
        const lease = await this.kube.get<Lease>(LEASES, this.opts.namespace, this.opts.name);
        if (lease.spec?.holderIdentity !== this.opts.identity) return;
        await this.kube.replace(LEASES, this.opts.namespace, this.opts.name, {
          ...lease,
          spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: kubeMicroTime(new Date(this.clock.now())) },
        });
        this.log.info('released the leader Lease');
        return;
      } catch (err) {
        if (isNotFound(err)) return;
        if (isConflict(err)) continue; // written between our read and our write: read it again
        this.log.warn({ err: errorMessage(err) }, 'could not release the leader Lease');
        return;
      }
    }
    this.log.warn('could not release the leader Lease: it kept changing under us');
  }
}
