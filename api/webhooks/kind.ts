// The `webhook` kind of notice (api/notices/kinds.ts): each event of the box a Webhook subscribes
// to, POSTed to it as one CloudEvent in structured mode, signed per Standard Webhooks.
//
// CloudEvents 1.0, JSON event format and HTTP protocol binding: "In the structured content mode,
// event metadata attributes and event data are placed into the HTTP request [...] body using an
// event format", with "The HTTP message's Content-Type header MUST be set to the media type of an
// event format" (application/cloudevents+json). The CloudEvent's `id` is the Standard Webhooks
// `webhook-id`: "the same no matter how many times a webhook that has failed is retried", so it is
// derived from the notice's id, and a receiver that keeps the ids it saw handles each event once.
//
// Standard Webhooks on the answer: "A webhook delivery is considered successful if it was
// responded to with a `2xx` status code", and "`410 Gone`: This is an indication by the server that
// it's no longer interested in receiving webhooks from this source. Sender should disable the
// webhook endpoint, and stop sending it messages": the notice is given up, and the Webhook makes no
// more notices until it is changed (api/store/webhooks.ts markGone).
import type { Config } from '../config.js';
import type { Pool, Transaction } from '../db/pool.js';
import { postToReceiver, receiverRulesOf } from '../notices/post.js';
import { NoticeRefused, type BoxEvent, type Notice, type NoticeDraft, type NoticeKind, type NoticeKindName } from '../notices/kinds.js';
import { webhooks } from '../store/webhooks.js';
import { eventSubject, eventType } from './event-types.js';
import { signedHeaders, webhookSecret } from './signing.js';

/** What the kind uses of the process's services (api/services.ts). */
export interface Needs {
  config: Pick<Config, 'baseUrl' | 'notices'>;
  pool: Pool;
  factorKey: Buffer;
}

/** Standard Webhooks' example schedule retries for three days ("a retry schedule spanning multiple days"). */
export const WEBHOOK_GIVE_UP_AFTER_MS = 3 * 24 * 60 * 60 * 1000;

/** What a notice carries from its event to its send: the CloudEvent but its id and source. */
interface WebhookPayload {
  type: string;
  time: string;
  subject?: string;
  data: Record<string, unknown>;
}

/**
 * The CloudEvent's `data`: the audit event as its log line has it (api/audit.ts: never a secret),
 * with the sessions a close ended (their person's `sub`, client and `sid`) and the person an event
 * was about as they were then.
 */
function eventData(event: BoxEvent): Record<string, unknown> {
  const { closed, person } = event.facts;
  return {
    ...event.event,
    ...(closed
      ? { closed: closed.map((s) => ({ session: s.session, client: s.client, sub: s.user === null ? null : String(s.user), sid: s.sid })) }
      : {}),
    ...(person ? { person: { sub: String(person.id), email: person.email } } : {}),
  };
}

/** The subject of a close: the one person whose sessions it ended, if it ended one person's. */
function subjectOf(event: BoxEvent): string | undefined {
  const subject = eventSubject(event.event);
  if (subject !== undefined) return subject;
  const people = new Set((event.facts.closed ?? []).map((s) => s.user));
  const [only] = people;
  return people.size === 1 && only !== null && only !== undefined ? String(only) : undefined;
}

/** A notice about a notice of this Webhook's given up is not sent to it: it would tell a receiver that is not answering. */
function isAbout(event: BoxEvent, webhook: string): boolean {
  const e = event.event as { event: string; kind?: string; destination?: string };
  return e.event === 'notice' && e.kind === ('webhook' satisfies NoticeKindName) && e.destination === webhook;
}

/** The CloudEvent (structured mode, JSON) a notice is sent as: the same document at every attempt. */
export function cloudEvent(notice: Pick<Notice, 'id' | 'payload'>, source: string): Record<string, unknown> {
  const p = notice.payload as unknown as WebhookPayload;
  return {
    specversion: '1.0',
    id: `notice_${notice.id}`,
    source,
    type: p.type,
    time: p.time,
    ...(p.subject !== undefined ? { subject: p.subject } : {}),
    datacontenttype: 'application/json',
    data: p.data,
  };
}

export function webhookKind(svc: Needs, now = (): Date => new Date()): NoticeKind {
  return {
    giveUpAfterMs: WEBHOOK_GIVE_UP_AFTER_MS,

    async fanOut(tx: Transaction, event: BoxEvent): Promise<NoticeDraft[]> {
      const type = eventType(event.event);
      if (!type) return [];
      const subject = subjectOf(event);
      const payload: WebhookPayload = {
        type,
        time: event.at.toISOString(),
        ...(subject !== undefined ? { subject } : {}),
        data: eventData(event),
      };
      const ids = await webhooks.subscribedTo(tx, type);
      return ids
        .filter((id) => !isAbout(event, id))
        .map((destination) => ({ destination, ...(subject !== undefined ? { subject } : {}), payload: { ...payload } }));
    },

    async send(notice: Notice, signal: AbortSignal): Promise<void> {
      const stored = await webhooks.read(svc.pool, notice.destination);
      if (!stored) throw new NoticeRefused(`Webhook "${notice.destination}" was deleted`);
      const secret = webhookSecret(svc.factorKey, stored.resource.id, stored.secretSealed ?? null);
      if (!secret) throw new NoticeRefused(`Webhook "${notice.destination}" has no signing secret`);
      const event = cloudEvent(notice, svc.config.baseUrl);
      const body = JSON.stringify(event);
      const headers = {
        'content-type': 'application/cloudevents+json; charset=utf-8',
        ...signedHeaders(secret, event.id as string, body, now()),
      };
      const { status } = await postToReceiver(stored.resource.url, { headers, body, signal }, await receiverRulesOf(svc));
      if (status >= 200 && status < 300) return;
      if (status === 410) {
        await webhooks.markGone(svc.pool, notice.destination);
        throw new NoticeRefused(`Webhook "${notice.destination}" answered 410 Gone: it is not sent to until it is changed`);
      }
      throw new Error(`Webhook "${notice.destination}" answered ${status}`);
    },
  };
}
