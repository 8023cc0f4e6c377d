// The record of the decision point's decisions. Every decision is an audit line
// (buffered, like token events: api/audit.ts) with its id, the policies that
// allowed it and those that did not; metrics count them by app, door and result.
// Refused decisions are kept in the database for a while (BOXAUTH_DECISION_RETENTION_HOURS)
// so that `boxauth explain <id>` can replay them: written in batches, off the hot
// path, from a bounded queue (when it overflows, the oldest wait is dropped and
// counted: explaining never slows deciding).
//
// Not every refusal is kept. A stranger with curl and no credential can be refused as
// fast as the box can answer, each refusal with up to the request line's limits of
// query: kept, a day of that is terabytes. So only the refusals of an identified
// caller (a live token or sign-in cookie, or an AuthZEN subject a PEP named) are kept,
// at most KEPT_PER_SECOND a second per process; the rest are in the audit log only,
// and counted (boxauth_decisions_not_kept_total, by why).
import type { Pool } from '../db/pool.js';
import type { Audit } from '../audit.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { findDecision, insertDecisions, type DecisionRow } from '../store/decisions.js';
import type { Decision } from './engine.js';

const MAX_QUEUED = 10_000;
const BATCH = 500;
export const KEPT_PER_SECOND = 50;

/** At most `perSecond` a second: whether one more may go now. */
export class PerSecondBudget {
  private second = -1;
  private used = 0;

  constructor(private readonly perSecond: number) {}

  take(now: number): boolean {
    const second = Math.floor(now / 1000);
    if (second !== this.second) {
      this.second = second;
      this.used = 0;
    }
    if (this.used >= this.perSecond) return false;
    this.used++;
    return true;
  }
}

export class Decisions {
  private queue: DecisionRow[] = [];
  private writing = false;
  private readonly budget = new PerSecondBudget(KEPT_PER_SECOND);

  constructor(
    private readonly pool: Pool,
    private readonly audit: Audit,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {}

  record(d: Decision, seconds: number, now = Date.now()): void {
    this.metrics.decisions.inc({ app: d.app ?? '', door: d.door, result: d.allowed ? 'allow' : 'deny' });
    this.metrics.decisionDuration.observe({ door: d.door }, seconds);
    if (!d.allowed) this.metrics.decisionDenials.inc({ app: d.app ?? '', reason: d.reason });
    this.audit.record({
      event: 'decision',
      id: d.id,
      app: d.app,
      door: d.door,
      allowed: d.allowed,
      status: d.status,
      reason: d.reason,
      policies: d.outcomes,
      ...(d.caller.client ? { client: d.caller.client } : {}),
      ...(d.caller.user ? { user: d.caller.user.id } : {}),
      ...(d.caller.session ? { session: d.caller.session } : {}),
    });
    if (d.allowed || d.request === null) return;
    if (!d.caller.user && !d.caller.client) return void this.metrics.decisionsNotKept.inc({ why: 'anonymous' });
    if (!this.budget.take(now)) return void this.metrics.decisionsNotKept.inc({ why: 'rate' });
    if (this.queue.length >= MAX_QUEUED) {
      this.queue.shift();
      this.metrics.decisionsNotKept.inc({ why: 'queue' });
    }
    this.queue.push({
      id: d.id,
      app: d.app!,
      at: new Date(),
      status: d.status,
      reason: d.description,
      request: d.request,
      policies: d.outcomes,
    });
    this.flush();
  }

  private flush(): void {
    if (this.writing || !this.queue.length) return;
    this.writing = true;
    const batch = this.queue.splice(0, BATCH);
    insertDecisions(this.pool, batch)
      .catch((err: Error) => this.log.warn({ err: err.message, lost: batch.length }, 'refused decisions could not be recorded'))
      .finally(() => {
        this.writing = false;
        this.flush();
      });
  }

  /** A refused decision, as recorded (undefined when unknown or purged). */
  find(id: string): Promise<DecisionRow | undefined> {
    return findDecision(this.pool, id);
  }
}
