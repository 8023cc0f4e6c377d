// Audit events: one JSON line per security-relevant event, with `"audit": true`
// so that a log pipeline can route them apart from the rest (docs/operations/audit.md),
// and a row of the audit trail in the database that GET /AuditEvent searches.
// They say who did what to which record, never a secret: no token, code, password
// or secret is a field of any event (the AuditEvent type below is the whole list).
// Token events (one per token issued or refused) go to the buffered access log
// stream, like the request lines they accompany, which skips pino's redaction
// (api/log.ts): so a field added here must never hold a secret. The others are
// written at once, redacted like every log line.
import type { JwtAlg } from './config.js';
import type { CredentialKind } from './factor-kinds.js';
import type { Logger } from './log.js';
import { PerSecondBudget } from './per-second-budget.js';
import { CHANGED_KINDS, segmentOf, type ChangedKind, type ServedKind } from './record-kinds.js';

/** Who acted: the token behind an API call (its client, its user, its session), or a person signed in on the box's pages. */
export interface Actor {
  client?: string;
  user?: string;
  session?: string;
}

/** Why sessions are closed (the audit's `how`; api/credentials/closing.ts closes them). */
export type CloseReason =
  | 'sign-out'
  | 'revoke'
  | 'logout'
  | 'api'
  | 'refresh-token-reuse'
  | 'code-replay'
  | 'password-change'
  | 'user-deleted'
  | 'client-deleted'
  /** A way back in (a recovery code, an administrator's reset of the factors): the person's other sessions end. */
  | 'factors-reset'
  | 'recovery-code'
  /** A password reset by a mailed link: every session, refresh token and pending code of the person ends. */
  | 'password-reset'
  /** The person withdrew their consent to a client: its grants of theirs end. */
  | 'consent-withdrawn'
  /** The person was turned off (SCIM active=false, or the REST API's active: false). */
  | 'deactivated'
  /** An upstream identity was unlinked: the browsers it signed in end, with what was issued through them. */
  | 'unlinked'
  /** An administrator vouched for the address the account held and never proved: its maker's sessions end. */
  | 'adopted';

export type AuditEvent =
  | { event: 'sign_in'; outcome: 'success' | 'failure' | 'locked'; user?: string; address: string; reason?: string }
  | {
      event: 'token_issued';
      client: string;
      grant: string;
      session: string;
      user?: string;
      /** How the client proved who it is (api/oauth/client-auth.ts ClientAuthMethod): its secret, its key, a workload's token… */
      client_auth_method?: string;
    }
  | { event: 'token_refused'; client?: string; grant?: string; error: string; address: string }
  | {
      event: 'session_closed';
      /** The sessions closed (ids); a sign-out may close a whole family. */
      sessions: string[];
      how: CloseReason;
      by: Actor;
    }
  | {
      event: 'decision';
      id: string;
      app: string | null;
      door: string;
      allowed: boolean;
      status: number;
      reason: string;
      /** The app's policies that applied, and what each said. */
      policies: { id: string; verdict: string }[];
      /** An allowed decision's line stands for this many (BOXAUTH_AUDIT_ALLOWED_DECISION_SAMPLE); absent: for itself. */
      sampled?: number;
      /** Whom it was decided about: the caller of the request refused, or the subject an AuthZEN PEP named. */
      client?: string;
      user?: string;
      session?: string;
      /** How the token's client proved who it is when the token was issued (as token_issued says). */
      client_auth_method?: string;
      /**
       * Who asked, when not the subject: the AuthZEN PEP's token. The actor of the event is who
       * called, never the subject it named (a PEP naming `root` acts as itself, not as root).
       */
      by?: Actor;
    }
  | {
      /**
       * A request of an identified caller to the box's own API that it refused with 403 (the
       * policies, or the writer check: api/policy/writers.ts): OWASP ASVS v4 V7.2.2, "all failed
       * decisions are logged". A write (any method but GET and HEAD, bar the queries sent as POST) is
       * kept in the trail, at most KEPT_PER_CALLER_PER_MINUTE of one caller; a read is logged only.
       */
      event: 'api_refused';
      action: 'write' | 'read';
      method: string;
      /** The path as routed (no query: it may hold an access_token). */
      path: string;
      /** The record the route addresses (its kind as the trail names it, and id), when it names one. */
      kind?: ServedKind;
      id?: string;
      /** Why, as the 403 said it. */
      reason: string;
      by: Actor;
    }
  | {
      /**
       * One caller's events over KEPT_PER_CALLER_PER_MINUTE in a minute, left out of the trail (they
       * are in the log): how many of each, once for that caller and minute, when the minute ends.
       */
      event: 'left_out';
      by: Actor;
      events: Record<string, number>;
      since: string;
      until: string;
    }
  | {
      /**
       * A signed-in browser's session strengthened (api/people/browsers.ts strengthen), under the
       * same `sid`: a step-up gave a factor an app asked for (`factor-given`), or a factor enrolled
       * in the session (on the account page, or by a step-up that enrols) counts from now on
       * (`factor-enrolled`). What the session proved before and after: its class of sign-in (`acr`,
       * api/credentials/acr.ts) and its RFC 8176 `amr` values.
       */
      event: 'session_strengthened';
      action: 'factor-given' | 'factor-enrolled';
      user: string;
      /** The browser session's public id (the `sid` of its ID tokens). */
      sid: string;
      from: { acr: string; amr: string[] };
      to: { acr: string; amr: string[] };
      by: Actor;
      address?: string;
    }
  | {
      /** A person's second factors: enrolled, removed, reset by an administrator, a recovery code used, codes made anew. */
      event: 'factor';
      action: 'enrolled' | 'removed' | 'reset' | 'recovery-code-used' | 'recovery-codes-made';
      user: string;
      kind?: CredentialKind;
      /** The factor's id (a passkey's, a TOTP's), never its key or secret. */
      factor?: string;
      by: Actor;
      address?: string;
    }
  | {
      /**
       * A sign-in through an IdentityProvider (api/people/upstream/): a person made, an identity
       * linked (on a trusted email, or from the account page), unlinked, or a sign-in refused
       * (which rule: api/people/upstream/linking.ts; or what the provider answered).
       */
      event: 'upstream';
      action: 'created' | 'linked' | 'unlinked' | 'refused';
      provider: string;
      /** The identity at the provider (its subject), never a token or a code. */
      subject?: string;
      user?: string;
      reason?: string;
      by?: Actor;
      address?: string;
    }
  | {
      /**
       * A person's account: a reset asked for (by address: it may have none) and done, a password
       * changed on the account page, an address changed, verified by its link, vouched for (or
       * no longer) by an administrator, a mail given up after its retries.
       */
      event: 'account';
      action:
        | 'password-reset-requested'
        | 'password-reset'
        | 'password-changed'
        | 'email-change-requested'
        | 'email-changed'
        | 'email-verified'
        | 'email-vouched'
        | 'email-unvouched'
        | 'consent-withdrawn'
        | 'mail-given-up'
        /** Turned off and on again (SCIM active, the REST API's active). */
        | 'deactivated'
        | 'activated'
        /** Vouched for an address the account held and never proved: its maker's password, factors and sign-ins ended. */
        | 'adopted';
      user?: string;
      /** The address concerned (never a link or its token). */
      email?: string;
      client?: string;
      by: Actor;
      address?: string;
    }
  | {
      /**
       * The keys that sign the box's JWTs (api/credentials/keyring.ts): a new key of `alg` signs
       * from now on, and the keys it replaced are retired (still published, so that what they signed
       * verifies). Asked by an administrator (`by`), or done by the box: a key due for replacement
       * (BOXAUTH_KEY_ROTATION_DAYS), a first key, or BOXAUTH_SIGNING_KEY changed.
       */
      event: 'signing_key';
      action: 'rotated';
      alg: JwtAlg;
      /** The new key's id (the JWK `kid`); never a key's private half. */
      kid: string;
      retired: string[];
      by?: Actor;
    }
  | {
      /** Retired keys no live token needs any more, no longer published. */
      event: 'signing_key';
      action: 'dropped';
      kids: string[];
    }
  | {
      /**
       * A notice out of the box (api/notices/: a back-channel logout token, a Shared Signals event,
       * a webhook) given up: refused by its receiver, or not acknowledged after its kind's retries.
       * Never its payload.
       */
      event: 'notice';
      action: 'given-up';
      kind: string;
      /** Within the kind: a client id (backchannel), a stream id (ssf), a Webhook's id (webhook). */
      destination: string;
      /** Why the last attempt failed (no secret: what the receiver answered, or the connection's error). */
      reason?: string;
    }
  | {
      /**
       * A Hook (api/hooks/) refused a moment, or a call to it failed (its failurePolicy then
       * decided: `outcome`). Never what was sent or a secret: the hook, the moment, the result and why.
       */
      event: 'hook';
      hook: string;
      moment: string;
      /** refused, or why the call failed (boxauth_hook_calls_total's result). */
      result: string;
      /** What the moment came to: refused, or went on (a failed call of a Hook whose failurePolicy is Ignore). */
      outcome: 'refused' | 'went-on';
      reason?: string;
      /** Failed calls alike (this hook, this result) left out of the trail since the last line: one a second is kept. */
      alikeLeftOut?: number;
      client?: string;
      user?: string;
    }
  | {
      /**
       * The ranges receivers of notices may be at although special-use (PUT /settings/notices,
       * api/notices/allow-list.ts) changed: what the guard against requests into the box's own
       * networks lets through, so who changed it, and from what to what, is kept.
       */
      event: 'settings_changed';
      setting: 'notices';
      changes: Record<string, FieldChange>;
      by: Actor;
    }
  | {
      event: 'record_changed';
      kind: ChangedKind;
      id: string;
      action: 'created' | 'changed' | 'deleted';
      by: Actor;
      /** The fields whose value changed, before → after (./record-changes.ts); a secret only as `"(changed)"`. */
      changes?: Record<string, FieldChange>;
    };

/** A field of a record before and after a write (absent: the field was not there). */
export interface FieldChange {
  from?: unknown;
  to?: unknown;
}

/** An audit event as the trail keeps it: the event whole, and the columns it is searched by. */
export interface AuditRow {
  event: AuditEvent['event'];
  action: string | null;
  outcome: 'success' | 'failure';
  actorClient: string | null;
  actorUser: string | null;
  actorSession: string | null;
  subjectUser: string | null;
  client: string | null;
  resourceType: string | null;
  resourceId: string | null;
  detail: AuditEvent;
}

/** An event of the trail as GET /AuditEvent shows it (api/http/routes/audit-events.ts; read by `boxauth events` and the console's Events tab). */
export interface AuditEventResource {
  resourceType: 'AuditEvent';
  id: string;
  at: string;
  event: AuditEvent['event'];
  action: string | null;
  outcome: 'success' | 'failure';
  actor: { client: string | null; user: string | null; session: string | null };
  /** The person the event concerns. */
  user: string | null;
  client: string | null;
  /**
   * Whom a refused decision was about, apart from who asked (`actor`): the caller of the request at
   * a gate (then the actor too), or the subject an AuthZEN PEP named; null for other events.
   */
  subject: { client: string | null; user: string | null } | null;
  resource: { type: string; id: string } | null;
  /** The event as its log line has it. */
  detail: Record<string, unknown>;
}

/**
 * Where audit rows are written (api/store/audit-events.ts): `within` a transaction, as part of the
 * change the event reports; `soon`, on its own, in a batch shortly after (for events that report
 * no change of the database, or one made without a transaction of the box's).
 */
export interface AuditTrail {
  /**
   * With the outbox of notices on (api/notices/), the event goes to it too, in `tx`, with `facts`
   * (api/notices/kinds.ts EventFacts: the base does not import the floor that defines them).
   */
  within(tx: InTransaction, row: AuditRow, facts?: object): Promise<void>;
  soon(row: AuditRow): void;
  /** An event left out of the trail (it is logged): counted, with why. */
  leftOut(why: LeftOutWhy): void;
}

/** Why an event was left out of the trail by Audit.record: see REFUSED_SIGN_INS_KEPT_PER_SECOND and KEPT_PER_CALLER_PER_MINUTE. */
export type LeftOutWhy = 'anonymous' | 'rate' | 'caller';

/**
 * Events of one caller the trail keeps a minute, per process, of those any identified caller can
 * cause at will without changing anything (BOUNDED_EVENTS): a client allowed only to ask an App's
 * PDP, refused in a loop about made-up subjects, would else fill the trail at the decision record's
 * pace (50 a second). The rest are in the log, and counted: metric and a `left_out` event.
 */
export const KEPT_PER_CALLER_PER_MINUTE = 60;
const BOUNDED_EVENTS: ReadonlySet<AuditEvent['event']> = new Set(['decision', 'api_refused']);
/** Callers counted in one minute at most: past them, a new caller's bounded events are left out (a flood of identities). */
const MOST_CALLERS_A_MINUTE = 10_000;

/**
 * The events that record a change of the box: what an administrator, a directory or a person did
 * to its records, people, factors and keys. Under the trail's row cap (api/jobs/purge.ts) they go
 * last: the rest (sign-ins, closes, refusals, notices) are deleted first, so that nothing anyone can
 * cause at will pushes a change out before its retention. Of the changes, people's own (their
 * factors, passwords, addresses, links: anyone with an account makes them at will) go before the
 * box's (BOX_CHANGE_EVENTS, and whatever a client of the box's API changed): a box change gives way
 * only to newer box changes, never to a person pressing a button in a loop.
 */
export const CHANGE_EVENTS: readonly AuditEvent['event'][] = [
  'record_changed',
  'account',
  'factor',
  'settings_changed',
  'signing_key',
  'session_strengthened',
  'upstream',
];
/** The changes that are the box's whoever made them: its records, its settings, its keys. */
export const BOX_CHANGE_EVENTS: readonly AuditEvent['event'][] = ['record_changed', 'settings_changed', 'signing_key'];
/** …but not these actions of theirs, which report no change, and which a stranger can cause (a reset asked for by address). */
export const NOT_CHANGES: readonly string[] = ['password-reset-requested', 'email-change-requested', 'mail-given-up'];

/** Whether the trail keeps `row` as a change (CHANGE_EVENTS): a refusal never is. */
export function isChange(row: Pick<AuditRow, 'event' | 'action' | 'outcome'>): boolean {
  return row.outcome === 'success' && CHANGE_EVENTS.includes(row.event) && !NOT_CHANGES.includes(row.action ?? '');
}

/** Whether the trail keeps `row` as a change of the box (kept longest): of its records, settings or keys, or made by a client of its API. */
export function isBoxChange(row: Pick<AuditRow, 'event' | 'action' | 'outcome' | 'actorClient'>): boolean {
  return isChange(row) && (BOX_CHANGE_EVENTS.includes(row.event) || row.actorClient !== null);
}

/** Refused sign-ins kept a second, per process, and of one person (see Audit.record). */
export const REFUSED_SIGN_INS_KEPT_PER_SECOND = 20;
export const REFUSED_SIGN_INS_KEPT_PER_PERSON_PER_SECOND = 2;

/** An open transaction of api/db/pool.ts (the base does not import db/: the trail's writer knows it). */
export type InTransaction = object;

/**
 * The row the trail keeps of an event, or undefined for those it leaves to the log stream: the
 * token endpoint's own (one per token: `make bench` measures the token path without a write
 * more) and the decisions the gate allowed (one per request at every app). Refused decisions are
 * kept, with their id for `boxauth explain`.
 */
export function auditRow(event: AuditEvent): AuditRow | undefined {
  if (event.event === 'token_issued' || event.event === 'token_refused') return undefined;
  if (event.event === 'decision' && event.allowed) return undefined;
  if (event.event === 'api_refused' && event.action === 'read') return undefined;
  const by: Actor = 'by' in event && event.by ? event.by : {};
  const failed =
    (event.event === 'sign_in' && event.outcome !== 'success') ||
    event.event === 'decision' ||
    event.event === 'api_refused' ||
    event.event === 'left_out' ||
    (event.event === 'upstream' && event.action === 'refused') ||
    event.event === 'notice';
  const callerActs = event.event === 'decision' && !event.by;
  const user = 'user' in event && event.user !== undefined ? String(event.user) : null;
  const client = 'client' in event && event.client !== undefined ? event.client : null;
  const resource =
    event.event === 'record_changed'
      ? { type: event.kind, id: event.id }
      : event.event === 'decision'
        ? { type: 'Decision', id: event.id }
        : event.event === 'api_refused' && event.kind !== undefined && event.id !== undefined
          ? { type: event.kind, id: event.id }
          : event.event === 'session_closed' && event.sessions.length === 1
            ? { type: 'Session', id: event.sessions[0]! }
            : event.event === 'signing_key' && event.action === 'rotated'
              ? { type: 'SigningKey', id: event.kid }
              : undefined;
  return {
    event: event.event,
    action:
      'action' in event
        ? event.action
        : event.event === 'sign_in'
          ? event.outcome
          : event.event === 'session_closed'
            ? event.how
            : event.event === 'decision'
              ? 'refused'
              : null,
    outcome: failed ? 'failure' : 'success',
    // A sign-in's actor is the person signing in; a decision's, who asked: the PEP (`by`) that named
    // its subject, else the caller the gate refused. Never the subject a PEP named.
    actorClient: by.client ?? (callerActs ? client : null),
    actorUser: by.user ?? (event.event === 'sign_in' || callerActs ? user : null),
    actorSession: by.session ?? (callerActs ? (event.session ?? null) : null),
    subjectUser: event.event === 'record_changed' && event.kind === 'User' ? event.id : user,
    client: event.event === 'record_changed' && event.kind === 'Client' ? event.id : client,
    resourceType: resource?.type ?? null,
    resourceId: resource?.id ?? null,
    detail: event,
  };
}

/** The kinds whose changes the trail reports and the path segment that reads one (`GET /<segment>/<id>`). */
const READ_AT: Record<string, string> = Object.fromEntries(CHANGED_KINDS.map((kind) => [kind, segmentOf(kind)]));

/**
 * The records an event names, each as the API reads it (`[segment, id]`: `GET /<segment>/<id>`):
 * the record it is about, the person it concerns, the client, a refused decision's App, an upstream sign-in's IdentityProvider. Whoever may
 * read each of them may see the event (GET /AuditEvent); an event that names none (a sign-in with
 * an unknown address), only an administrator of the whole box.
 */
export function recordsNamedBy(
  row: Pick<AuditRow, 'resourceType' | 'resourceId' | 'subjectUser' | 'client' | 'detail'>,
): [string, string][] {
  const named = new Map<string, [string, string]>();
  const add = (segment: string, id: string | null | undefined): void => {
    if (id) named.set(`${segment}/${id}`, [segment, id]);
  };
  if (row.resourceType && READ_AT[row.resourceType]) add(READ_AT[row.resourceType]!, row.resourceId);
  if (row.detail.event === 'decision') add('App', row.detail.app);
  // A sign-in through a provider names it, and the person's identity there.
  if (row.detail.event === 'upstream') add('IdentityProvider', row.detail.provider);
  add('users', row.subjectUser);
  add('Client', row.client);
  return [...named.values()];
}

const MINUTE = 60_000;

/**
 * What each caller (a person, else a client: the actor of a row) had kept of BOUNDED_EVENTS in
 * the current minute, and what it had left out, by event. Fixed minutes of the clock: at most
 * twice the bound across a minute's edge.
 */
class CallerMinutes {
  private minute = -1;
  private readonly kept = new Map<string, number>();
  private readonly over = new Map<string, { by: Actor; events: Record<string, number> }>();

  /** Whether `row` may be kept; counted as left out when not. */
  take(now: number, row: AuditRow): boolean {
    this.roll(now);
    const key = row.actorUser !== null ? `user:${row.actorUser}` : `client:${row.actorClient ?? ''}`;
    const kept = this.kept.get(key);
    if (kept === undefined ? this.kept.size < MOST_CALLERS_A_MINUTE : kept < KEPT_PER_CALLER_PER_MINUTE) {
      this.kept.set(key, (kept ?? 0) + 1);
      return true;
    }
    // Past MOST_CALLERS_A_MINUTE, the callers not yet counted are summed up as one (no actor).
    const overKey = kept === undefined ? '' : key;
    const over = this.over.get(overKey) ?? {
      by:
        overKey === ''
          ? {}
          : {
              ...(row.actorClient !== null ? { client: row.actorClient } : {}),
              ...(row.actorUser !== null ? { user: row.actorUser } : {}),
            },
      events: {},
    };
    over.events[row.event] = (over.events[row.event] ?? 0) + 1;
    this.over.set(overKey, over);
    return false;
  }

  /** The summaries of the minute that ended by `now` (none while it goes on), each once. */
  ended(now: number): AuditEvent[] {
    if (Math.floor(now / MINUTE) === this.minute) return [];
    const since = new Date(this.minute * MINUTE).toISOString();
    const until = new Date((this.minute + 1) * MINUTE).toISOString();
    const events = [...this.over.values()].map(({ by, events }): AuditEvent => ({ event: 'left_out', by, events, since, until }));
    this.roll(now);
    return events;
  }

  private roll(now: number): void {
    const minute = Math.floor(now / MINUTE);
    if (minute === this.minute) return;
    this.minute = minute;
    this.kept.clear();
    this.over.clear();
  }
}

export class Audit {
  constructor(
    private readonly now: Logger,
    private readonly buffered: Logger,
    private readonly trail?: AuditTrail,
  ) {}

  private readonly refusedSignIns = new PerSecondBudget(REFUSED_SIGN_INS_KEPT_PER_SECOND, REFUSED_SIGN_INS_KEPT_PER_PERSON_PER_SECOND);
  private readonly callers = new CallerMinutes();
  private summaries: ReturnType<typeof setTimeout> | undefined;

  /**
   * An event that reports no change of the box's database made in a transaction: logged, and kept
   * shortly after. A refused sign-in is kept only when it names a person, and at most so many a
   * second (of one person, and in all): a stranger trying addresses in a loop, whom the sign-in
   * throttle answers as fast as the box can, would otherwise push every other event out of the
   * trail under its row cap. The rest are in the log.
   */
  record(event: AuditEvent, now = Date.now()): void {
    this.log(event);
    const row = this.trail && auditRow(event);
    if (!row) return;
    this.summarize(now);
    if (event.event === 'sign_in' && event.outcome !== 'success') {
      if (event.user === undefined) return this.trail.leftOut('anonymous');
      if (this.refusedSignIns.take(now, event.user) !== 'ok') return this.trail.leftOut('rate');
    }
    // What one caller can cause at will is kept up to a bound a minute: the actor is who called (an
    // AuthZEN PEP, not the subjects it names), so that naming made-up subjects is still one caller.
    if (BOUNDED_EVENTS.has(row.event) && !this.callers.take(now, row)) {
      this.trail.leftOut('caller');
      // The summary of the minute is written when it ends: at the next event, or by then at the latest.
      this.summaries ??= setTimeout(
        () => {
          this.summaries = undefined;
          this.summarize(Date.now());
        },
        MINUTE - (now % MINUTE) + 1000,
      ).unref();
      return;
    }
    this.trail.soon(row);
  }

  /** The `left_out` events of the minutes that ended by `now`: one per caller that went over its bound. */
  private summarize(now: number): void {
    for (const event of this.callers.ended(now)) {
      this.log(event);
      this.trail?.soon(auditRow(event)!);
    }
  }

  /** An event for the log stream only, not the trail (a refused decision not kept: api/decision/record.ts). */
  logOnly(event: AuditEvent): void {
    this.log(event);
  }

  /**
   * An event about a change made in `tx`: kept in that transaction, so that a change never
   * commits without its record, nor a record without its change. Logged once written (a
   * transaction that then fails leaves a log line of a change that did not happen, as an
   * error in the log says). With the outbox of notices on, it is an event of the outbox as well,
   * in `tx`, with `facts` (api/notices/kinds.ts EventFacts: what the audit line leaves out).
   */
  async recordIn(tx: InTransaction, event: AuditEvent, facts?: object): Promise<void> {
    const row = this.trail && auditRow(event);
    if (row) await this.trail.within(tx, row, facts);
    this.log(event);
  }

  private log(event: AuditEvent): void {
    const log = event.event === 'token_issued' || event.event === 'token_refused' || event.event === 'decision' ? this.buffered : this.now;
    log.info({ audit: true, ...event }, event.event);
  }
}
