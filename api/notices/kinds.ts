// What the outbox of notices (api/notices/) asks of each kind of notice it carries out of the box:
// back-channel logout tokens (oauth/), SAML LogoutRequests (saml/), Shared Signals events (ssf/) and webhooks (webhooks/).
//
// A change of the box records its audit event in its own transaction (api/audit.ts recordIn); the
// same call writes one outbox event (migration 030), with the facts the audit line leaves out. A
// dispatcher takes outbox events one at a time per box, in order, and asks each kind, in one
// transaction with the event's removal, which notices it makes (fanOut). A sender then sends each
// notice with a deadline, one at a time per destination and subject, in order, retrying with backoff until
// it is acknowledged or given up. Neither a restart nor a failover loses one: every step is a row.
import type { AuditEvent } from '../audit.js';
import type { Transaction } from '../db/pool.js';

/** A session a close ended, as the closing transaction knew it (api/credentials/closing.ts). */
export interface ClosedSession {
  /** sessions.id */
  session: string;
  client: string;
  /** The person it was issued to; null for a client's own session. */
  user: number | null;
  /**
   * The `sub` its client was given of that person (api/credentials/subjects.ts); absent for a session
   * minted before release 036 (or recorded by the release before), whose sub was String(user).
   */
  sub?: string;
  /** The signed-in browser session it came from (the `sid` of its ID tokens), when it came from one. */
  sid: string | null;
  /**
   * A SAML app's sign-in (api/saml/sign-ins.ts), not a grant of tokens: the NameID the assertion
   * gave the app (its SessionIndex is `sid`). Told by the `saml-logout` kind, never by `backchannel`.
   */
  saml?: { nameId: string; nameIdFormat: string };
}

/** What the recorder of an event adds for the outbox, beyond its audit line; never logged, never a secret. */
export interface EventFacts {
  /** The sessions a `session_closed` event closed. */
  closed?: ClosedSession[];
  /** The person as they were when the event was recorded, for events after which they may be gone. */
  person?: { id: number; email: string | null; subject?: string };
  /**
   * A notice given up (`event: 'notice'`) that itself told of a give-up: the outbox fans it out to
   * no one, so that two dead receivers never tell each other of their give-ups in a loop.
   */
  quietGiveUp?: boolean;
}

/** An event of the outbox: an audit event recorded in the transaction of its change, with its facts. */
export interface BoxEvent {
  /** Increasing in commit order for events about one person (their changes hold their row). */
  id: string;
  at: Date;
  event: AuditEvent;
  facts: EventFacts;
}

/**
 * The names of the kinds of notice, as the outbox, its store and its metrics know them. Each name
 * is made by its kind in api/notice-kinds.ts (NOTICE_KINDS), which the type checker holds to this
 * list: the kinds live on the floors above this one (oauth/, ssf/, webhooks/), which this floor
 * does not import.
 */
export const NOTICE_KIND_NAMES = ['backchannel', 'saml-logout', 'ssf', 'webhook'] as const;

export type NoticeKindName = (typeof NOTICE_KIND_NAMES)[number];

/** One notice for one destination, as a kind's fan-out makes it. */
export interface NoticeDraft {
  /** Within the kind: a client id, a stream id, a Webhook's id (docs/operations/notices.md, "The kinds of notice"). */
  destination: string;
  /**
   * What `send` needs to build the message when it sends it; JSON, never a secret, never a token.
   * Its member `receiver`, when a string, names the record an administrator wrote that the
   * destination belongs to (an SSF stream's Client): the metrics name the destination by it
   * (metricsDestination), because a destination a receiver makes as often as it likes would be a
   * new label each time, and a metric keeps every label it was ever given.
   */
  payload: Record<string, unknown>;
  /**
   * Whom it is about (a person's `sub`, a record's kind and id): a destination's notices about one
   * subject go one at a time, in the order they were made; about different subjects, several at once.
   * None: ordered with the other notices that name none.
   */
  subject?: string;
}

/** The `destination` label of a notice's metrics: its payload's `receiver` when it names one, else its destination. */
export function metricsDestination(notice: Pick<NoticeDraft, 'destination' | 'payload'>): string {
  const receiver = notice.payload.receiver;
  return typeof receiver === 'string' ? receiver : notice.destination;
}

/** A notice taken from the outbox to be sent, its lease running. */
export interface Notice extends NoticeDraft {
  id: string;
  kind: NoticeKindName;
  eventId: string;
  createdAt: Date;
  /** Attempts so far, this one counted. */
  attempts: number;
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
