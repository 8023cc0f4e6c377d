// What the outbox of notices (api/notices/) asks of each kind of notice it carries out of the box:
// back-channel logout tokens (oauth/), SAML LogoutRequests (saml/), Shared Signals events (ssf/) and webhooks (webhooks/).
//
// A change of the box records its audit event in its own transaction (api/audit.ts recordIn); the
// same call writes one outbox event (migration 030), with the facts the audit line leaves out. A
// dispatcher takes outbox events one at a time per box, in order, and asks each kind, in one
// transaction with the event's removal, which notices it makes (fanOut). A sender then sends each
// notice with a deadline, one at a time per destination and subject, in order, retrying with backoff until
// it is acknowledged or given up. Neither a restart nor a failover loses one: every step is a row.
import type { Transaction } from '../db/pool.js';
import type { BoxEvent, Notice, NoticeDraft } from '../store/notices.js';

// The outbox's records (its events and notices) are the store's (../store/notices.ts), on the
// floor below: every kind takes them from here with the contract they serve.
export {
  NOTICE_KIND_NAMES,
  type BoxEvent,
  type ClosedSession,
  type EventFacts,
  type Notice,
  type NoticeDraft,
  type NoticeKindName,
} from '../store/notices.js';

/** The `destination` label of a notice's metrics: its payload's `receiver` when it names one, else its destination. */
export function metricsDestination(notice: Pick<NoticeDraft, 'destination' | 'payload'>): string {
  const receiver = notice.payload.receiver;
  return typeof receiver === 'string' ? receiver : notice.destination;
}

/** Thrown by `send` when trying again cannot help (the destination is gone): the notice is given up at once. */
export class NoticeRefused extends Error {}

/** A kind of notice; its name is its key in api/notice-kinds.ts (NOTICE_KINDS). */
export interface NoticeKind {
  /**
   * In the dispatch transaction: the notices of this kind `event` makes (for most events, none).
   * It may read what it needs in `tx`; it must not send anything.
   */
  fanOut(tx: Transaction, event: BoxEvent): Promise<NoticeDraft[]>;
  /**
   * Sends one notice (building its token or body now: a retry builds it anew with the same `jti`
   * or id, derived from `notice.id`); resolves once the receiver acknowledged it, throws to try
   * again later. `signal` aborts at the deadline.
   */
  send(notice: Notice, signal: AbortSignal): Promise<void>;
  /** How long after its event a notice is tried before it is given up. */
  giveUpAfterMs: number;
}
