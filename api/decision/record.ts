// The record of the decision point's decisions. Every decision is an audit line
// (buffered, like token events: api/audit.ts) with its id, the policies that
// allowed it and those that did not; metrics count them by app, door and result.
// Refused decisions are kept in the database for a while (BOXAUTH_DECISION_RETENTION_HOURS)
// so that `boxauth explain <id>` can replay them: written in batches, off the hot
// path, from a bounded queue (when it overflows, the oldest wait is dropped and
// counted: explaining never slows deciding).
//
// Not every refusal is kept, nor all of one. A stranger with curl and no credential can
// be refused as fast as the box can answer, each refusal with up to the request line's
// limits of query: kept, a day of that is terabytes. So only the refusals of an
// identified caller (a live token or sign-in cookie, or an AuthZEN subject a PEP named)
// are kept; at most KEPT_PER_SECOND a second per process, and of those at most
// KEPT_PER_CALLER_PER_SECOND of one caller (a user, else a client), so that a caller
// refused in a loop never crowds out another's refusals; each as a bounded excerpt
// (./excerpt.ts) that names what it cut. The rest are in the audit log only, and
// counted (boxauth_decisions_not_kept_total, by why). The purge job bounds the table
// by age and by rows (BOXAUTH_DECISION_MAX_ROWS: api/jobs/purge.ts).
//
// An allowed decision's audit line is the decision point's largest cost after deciding (about a
// kilobyte with 20 policies: a fifth of the CPU of a decision, `make bench`), and it is in the log
// only, never in the trail: an operator may log one in N of them (BOXAUTH_AUDIT_ALLOWED_DECISION_SAMPLE,
// each line saying `sampled: N`). A refusal is never sampled.
import type { Pool } from '../db/pool.js';
import type { Actor, Audit, AuditEvent } from '../audit.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { PolicyOutcome } from '../policy/evaluate.js';
import { findDecision, insertDecisions, recentDecisions, type DecisionRow, type DecisionSummary } from '../store/decisions.js';
import type { Decision } from './engine.js';
import { excerpt } from './excerpt.js';
import { PerSecondBudget } from '../per-second-budget.js';

const MAX_QUEUED = 10_000;
const BATCH = 500;
export const KEPT_PER_SECOND = 50;
export const KEPT_PER_CALLER_PER_SECOND = 5;

export class Decisions {
  private queue: DecisionRow[] = [];
  private writing = false;
  private readonly budget = new PerSecondBudget(KEPT_PER_SECOND, KEPT_PER_CALLER_PER_SECOND);
  /** Allowed decisions since the last one logged. */
  private allowedUnlogged = 0;

  /** `allowedSample`: one allowed decision in this many is logged (BOXAUTH_AUDIT_ALLOWED_DECISION_SAMPLE). */
  constructor(
    private readonly pool: Pool,
    private readonly audit: Audit,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly allowedSample = 1,
  ) {}

  /** `by`: who asked, when not the caller decided about (an AuthZEN PEP's token): the actor of the audit event. */
  record(d: Decision, seconds: number, by?: Actor, now = Date.now()): void {
    this.metrics.decisions.inc({ app: d.app ?? '', door: d.door, result: d.allowed ? 'allow' : 'deny' });
    this.metrics.decisionDuration.observe({ door: d.door }, seconds);
    if (!d.allowed) this.metrics.decisionDenials.inc({ app: d.app ?? '', reason: d.reason });
    if (d.allowed && this.allowedSample > 1 && ++this.allowedUnlogged < this.allowedSample) return;
    if (d.allowed) this.allowedUnlogged = 0;
    const kept = this.keep(d, now);
    const event: AuditEvent = {
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
      ...(d.caller.clientAuthMethod ? { client_auth_method: d.caller.clientAuthMethod } : {}),
      ...(by ? { by } : {}),
      ...(d.allowed && this.allowedSample > 1 ? { sampled: this.allowedSample } : {}),
    };
    // The audit trail keeps a refusal only when this record keeps it, by the same budget: a
    // stranger refused in a loop would else push every other event out of the trail (its row cap
    // keeps the newest), and the trail's decision id is there for `boxauth explain`. The trail then
    // bounds what one actor adds a minute (api/audit.ts KEPT_PER_CALLER_PER_MINUTE).
    if (kept) this.audit.record(event);
    else this.audit.logOnly(event);
  }

  /** Whether a refusal is kept for explaining (queued for the table); counted when it is not. */
  private keep(d: Decision, now: number): boolean {
    if (d.allowed || d.request === null) return false;
    const spent =
      !d.caller.user && !d.caller.client
        ? 'anonymous'
        : this.budget.take(now, d.caller.user ? `user:${d.caller.user.id}` : `client:${d.caller.client}`);
    if (spent !== 'ok') {
      this.metrics.decisionsNotKept.inc({ why: spent });
      return false;
    }
    if (this.queue.length >= MAX_QUEUED) {
      this.queue.shift();
      this.metrics.decisionsNotKept.inc({ why: 'queue' });
    }
    const request = excerpt(d.request, 'request');
    const policies = excerpt(d.outcomes, 'policies');
    this.queue.push({
      id: d.id,
      app: d.app!,
      at: new Date(),
      status: d.status,
      reason: d.description,
      request: request.value as object,
      policies: policies.value as PolicyOutcome[],
      cut: [...request.cut, ...policies.cut],
    });
    this.flush();
    return true;
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

  /** The newest refusals kept of `app`, newest first, at most `limit`. */
  recent(app: string, limit: number): Promise<DecisionSummary[]> {
    return recentDecisions(this.pool, app, limit);
  }
}
