// The CloudEvents `type` of an event of the audit trail, from the one list of types a Webhook may
// subscribe to (api/webhook-events.ts), and its `subject`.
//
// Only events the trail keeps reach the outbox (api/audit.ts auditRow): the token endpoint's own
// and the decisions the gate allowed do not, so they have no type.
import type { AuditEvent } from '../audit.js';
import { RESOURCE_KINDS } from '../record-kinds.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../webhook-events.js';

const PREFIX = 'io.boxauth';

/** The kinds of record whose changes are `io.boxauth.resource.*`: the resource API's (people and groups have types of their own). */
const RESOURCE_CHANGES = new Set<string>(RESOURCE_KINDS);

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
