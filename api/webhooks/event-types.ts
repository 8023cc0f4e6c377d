// The CloudEvents `type` of each event of the box a Webhook may subscribe to (crds/webhook.yaml
// spec.events), and which event of the audit trail each is. A type is `io.boxauth.<what>.<action>`:
// CloudEvents 1.0 §3.1.1 "SHOULD be prefixed with a reverse-DNS name"; Standard Webhooks "event
// types be formatted as an hierarchical, and full-stop delimited, list of identifiers [...] limited
// to a limited set of characters `[a-zA-Z0-9_]`", so the audit's `password-reset` is `password_reset`.
//
// Only events the trail keeps reach the outbox (api/audit.ts auditRow): the token endpoint's own
// and the decisions the gate allowed do not, so they have no type here.
import type { AuditEvent } from '../audit.js';
import { RESOURCE_KINDS } from '../record-kinds.js';

const PREFIX = 'io.boxauth';

/** The kinds of record whose changes are `io.boxauth.resource.*`: the resource API's (people and groups have types of their own). */
const RESOURCE_CHANGES = new Set<string>(RESOURCE_KINDS);

/** Every type a Webhook may subscribe to, in the order the reference lists them. */
export const WEBHOOK_EVENT_TYPES = [
  'io.boxauth.session.closed',
  'io.boxauth.session.strengthened',
  'io.boxauth.sign_in.succeeded',
  'io.boxauth.sign_in.failed',
  'io.boxauth.sign_in.locked',
  'io.boxauth.account.deactivated',
  'io.boxauth.account.activated',
  'io.boxauth.account.password_reset_requested',
  'io.boxauth.account.password_reset',
  'io.boxauth.account.password_changed',
  'io.boxauth.account.email_change_requested',
  'io.boxauth.account.email_changed',
  'io.boxauth.account.email_verified',
  'io.boxauth.account.email_vouched',
  'io.boxauth.account.email_unvouched',
  'io.boxauth.account.consent_withdrawn',
  'io.boxauth.account.mail_given_up',
  'io.boxauth.account.adopted',
  'io.boxauth.factor.enrolled',
  'io.boxauth.factor.removed',
  'io.boxauth.factor.reset',
  'io.boxauth.factor.recovery_code_used',
  'io.boxauth.factor.recovery_codes_made',
  'io.boxauth.upstream.created',
  'io.boxauth.upstream.linked',
  'io.boxauth.upstream.unlinked',
  'io.boxauth.upstream.refused',
  'io.boxauth.user.created',
  'io.boxauth.user.changed',
  'io.boxauth.user.deleted',
  'io.boxauth.group.created',
  'io.boxauth.group.changed',
  'io.boxauth.group.deleted',
  'io.boxauth.resource.created',
  'io.boxauth.resource.changed',
  'io.boxauth.resource.deleted',
  'io.boxauth.decision.refused',
  'io.boxauth.signing_key.rotated',
  'io.boxauth.signing_key.dropped',
  'io.boxauth.notice.given_up',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

const KNOWN = new Set<string>(WEBHOOK_EVENT_TYPES);

const word = (s: string): string => s.replace(/-/g, '_');

/** The CloudEvents type of `event`, or undefined when no Webhook may subscribe to it. */
export function eventType(event: AuditEvent): WebhookEventType | undefined {
  const e = event as { event: string; action?: string; outcome?: string; kind?: string; allowed?: boolean };
  let what: string;
  let action: string | undefined;
  switch (e.event) {
    case 'session_closed':
      [what, action] = ['session', 'closed'];
      break;
    case 'session_strengthened':
      [what, action] = ['session', 'strengthened'];
      break;
    case 'sign_in':
      [what, action] = ['sign_in', e.outcome === 'success' ? 'succeeded' : e.outcome === 'failure' ? 'failed' : e.outcome];
      break;
    case 'decision':
      [what, action] = ['decision', e.allowed ? undefined : 'refused'];
      break;
    case 'record_changed':
      what = e.kind === 'User' ? 'user' : e.kind === 'Group' ? 'group' : RESOURCE_CHANGES.has(e.kind ?? '') ? 'resource' : '';
      action = e.action;
      break;
    default:
      [what, action] = [e.event, e.action];
  }
  if (!what || !action) return undefined;
  const type = `${PREFIX}.${word(what)}.${word(action)}`;
  return KNOWN.has(type) ? (type as WebhookEventType) : undefined;
}

/**
 * The CloudEvents `subject` of `event` (§3.1.1 "the subject of the event in the context of the
 * event producer"): the person it is about (their `sub`, String(user id)), or the record changed
 * as `<Kind>/<id>`; undefined when it names neither.
 */
export function eventSubject(event: AuditEvent): string | undefined {
  if (event.event === 'record_changed') return event.kind === 'User' ? event.id : `${event.kind}/${event.id}`;
  if ('user' in event && event.user !== undefined) return String(event.user);
  return undefined;
}
