// The `ssf` kind of notice (api/notices/kinds.ts): a box event fans out to one notice per Shared
// Signals event and stream that asked for its type and whose receiver may have it; each is sent as
// a Security Event Token, pushed (RFC 8935) or kept for the receiver to poll (RFC 8936).
import type { Config } from '../config.js';
import type { Keyring } from '../credentials/keyring.js';
import type { Pool, Transaction } from '../db/pool.js';
import { postToReceiver, receiverRulesOf, type ReceiverAnswer } from '../notices/post.js';
import { NoticeRefused, type BoxEvent, type Notice, type NoticeDraft, type NoticeKind } from '../notices/kinds.js';
import { keepPollSet, streamById, streamsExcluding, streamsWanting, type StreamRow } from '../store/ssf-streams.js';
import { signalsOf, VERIFICATION, type SignalDraft } from './events.js';
import { mayReceive, type ReceiverNeeds } from './receivers.js';
import { eventsDelivered, POLL } from './streams.js';
import { personSubject, streamSubject } from './subjects.js';
import { sectorOf, subjectFor, type SubjectClient } from '../credentials/subjects.js';
import { getUser } from '../store/users.js';
import { securityEventToken } from './tokens.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
export interface SsfKindNeeds extends ReceiverNeeds {
  config: Pick<Config, 'baseUrl' | 'notices'>;
  pool: Pool;
  keyring: Pick<Keyring, 'activeFor'>;
}

/** What a notice of this kind keeps until it is sent: an event about a person, or a verification event. */
type SsfPayload = { receiver: string } & (
  | { type: typeof VERIFICATION; state?: string }
  | {
      type: string;
      user: number;
      sub?: string;
      /** Whose kind of sub `sub` is (subjectsOf): the receiver's when the event was fanned out. */
      madeFor?: string;
      sid: string | null;
      claims: Record<string, unknown>;
      at: number;
    }
);

/** Which subs a receiver is given: the public ones, or its sector's (api/credentials/subjects.ts sectorOf). */
const subjectsOf = (receiver: SubjectClient): string => (receiver.subject_type === 'pairwise' ? sectorOf(receiver) : 'public');

/** A day: a receiver down longer than that has lost the events (SSF has no replay), and is told so by no one but the metrics and the audit. */
const GIVE_UP_AFTER_MS = 24 * 3600_000;

/**
 * The verification event `receiver` asked for on its stream (SSF 1.0 §8.1.4.2), as enqueueNotice
 * takes it: `state` echoed when given; `receiver` names the stream's Client in the metrics
 * (api/notices/kinds.ts metricsDestination), never the stream a receiver makes at will.
 */
export const verificationNotice = (receiver: string, streamId: string, state: string | undefined): NoticeDraft => ({
  destination: streamId,
  payload: { receiver, type: VERIFICATION, ...(state !== undefined ? { state } : {}) },
});

/**
 * The notices of one Shared Signals event: one per stream that asked for its type, unless the
 * stream's receiver removed the person or its policies do not let it have their events.
 */
async function noticesOf(
  svc: SsfKindNeeds,
  tx: Transaction,
  event: BoxEvent,
  signal: SignalDraft,
  streams: StreamRow[],
): Promise<NoticeDraft[]> {
  const wanting = streams.filter((s) => eventsDelivered(s.eventsRequested).includes(signal.type));
  const removed = await streamsExcluding(
    tx,
    wanting.map((s) => s.id),
    signal.user,
  );
  const drafts: NoticeDraft[] = [];
  // Their opaque id, made now: a person deleted by this event is gone from the table (api/people/accounts.ts keeps it).
  const subject = event.facts.person?.subject ?? (await getUser(tx, signal.user))?.subject;
  for (const stream of wanting) {
    if (removed.has(stream.id)) continue;
    if (!(await mayReceive(svc, stream.clientId, stream.id, signal.user, event.facts.person))) continue;
    const receiver = (await svc.clients.get(stream.clientId))?.resource;
    const sub = receiver && subject ? subjectFor(svc.subjects, receiver, { id: signal.user, subject }) : undefined;
    const payload: SsfPayload = {
      receiver: stream.clientId,
      type: signal.type,
      user: signal.user,
      ...(receiver && sub !== undefined ? { sub, madeFor: subjectsOf(receiver) } : {}),
      sid: signal.sid,
      claims: signal.claims,
      at: Math.floor(event.at.getTime() / 1000),
    };
    drafts.push({ destination: stream.id, subject: String(signal.user), payload });
  }
  return drafts;
}

/** The SET of `notice` for `stream`: its `jti` is the notice's id, the same at every attempt. */
function tokenOf(svc: SsfKindNeeds, stream: StreamRow, notice: Notice): string {
  const payload = notice.payload as SsfPayload;
  const common = { issuer: svc.config.baseUrl, audience: stream.clientId, jti: notice.id };
  if (!('user' in payload)) {
    return securityEventToken(svc.keyring, {
      ...common,
      subject: streamSubject(stream.id),
      type: VERIFICATION,
      event: payload.state !== undefined ? { state: payload.state } : {},
    });
  }
  return securityEventToken(svc.keyring, {
    ...common,
    // A notice of the release before has no sub: it was String(user) then.
    subject: personSubject(svc.config.baseUrl, payload.sub ?? String(payload.user), payload.sid),
    type: payload.type,
    // CAEP 1.0 §2: event_timestamp, when the event happened (the SET's iat is when it was made).
    event: { ...payload.claims, event_timestamp: payload.at },
  });
}

/**
 * RFC 8935 §2.2: "the SET Recipient [...] MUST respond with a 202 Accepted"; §2.3: a SET it cannot
 * accept is answered 400 with an `err` (invalid_request, invalid_key, invalid_issuer,
 * invalid_audience, authentication_failed, access_denied): sent again it would be refused again,
 * so it is given up. Any other answer (a 5xx, a 401 while the receiver fixes its credentials) is
 * tried again later.
 */
function judgeAnswer(answer: ReceiverAnswer): void {
  if (answer.status === 202) return;
  if (answer.status === 400) {
    let err = 'no err';
    try {
      const parsed = JSON.parse(answer.body) as { err?: unknown; description?: unknown };
      if (typeof parsed.err === 'string') err = parsed.err.slice(0, 100);
    } catch {
      // A receiver that answers 400 without RFC 8935's JSON still refused the SET.
    }
    throw new NoticeRefused(`the receiver refused the SET (400, ${err})`);
  }
  throw new Error(`the receiver answered ${answer.status}, not 202`);
}

export function ssfKind(svc: SsfKindNeeds): NoticeKind {
  return {
    giveUpAfterMs: GIVE_UP_AFTER_MS,
    async fanOut(tx, event) {
      const signals = signalsOf(event);
      if (!signals.length) return [];
      const streams = await streamsWanting(tx, [...new Set(signals.map((s) => s.type))]);
      if (!streams.length) return [];
      const drafts: NoticeDraft[] = [];
      for (const signal of signals) drafts.push(...(await noticesOf(svc, tx, event, signal, streams)));
      return drafts;
    },
    async send(notice, signal) {
      const stream = await streamById(svc.pool, notice.destination);
      if (!stream) throw new NoticeRefused('the stream was deleted');
      // SSF 1.0 §8.1.2: a disabled stream's events are not kept; a paused one's wait (tried again later).
      if (stream.status === 'disabled') throw new NoticeRefused('the stream is disabled');
      if (stream.status === 'paused') throw new Error('the stream is paused');
      const payload = notice.payload as SsfPayload;
      // A pairwise receiver naming another party's sector_identifier_uri, whose document does not
      // list it, would read people by that party's subs and link them: its events about people wait
      // (tried again, and given up after a day) until the document lists it.
      if ('user' in payload) {
        const client = (await svc.clients.get(stream.clientId))?.resource;
        const refusal = client && (await svc.sectorRefusal(client));
        if (refusal) throw new Error(`the receiver is given no sub of its sector: ${refusal}`);
        // The sub was made when the event was fanned out, for the receiver as it was then; the check above
        // vouches for it as it is now. A receiver whose sector (or subject type) changed since, say from
        // another party's sector its document never listed to one of its own, would be sent that party's sub.
        if (client && payload.madeFor !== undefined && payload.madeFor !== subjectsOf(client))
          throw new NoticeRefused("the receiver's subs are of another sector than when the event was made");
      }
      const type = payload.type;
      // The receiver may have stopped asking for this type since (an update of events_requested).
      if (type !== VERIFICATION && !eventsDelivered(stream.eventsRequested).includes(type)) return;
      const token = tokenOf(svc, stream, notice);
      if (stream.deliveryMethod === POLL) {
        await keepPollSet(svc.pool, stream.id, notice.id, token);
        return;
      }
      // RFC 8935 §2: the SET as the body, application/secevent+jwt; the stream's authorization_header exactly, none when none.
      const headers: Record<string, string> = { 'Content-Type': 'application/secevent+jwt', Accept: 'application/json' };
      if (stream.authorizationHeader !== null) headers.Authorization = stream.authorizationHeader;
      judgeAnswer(await postToReceiver(stream.endpointUrl!, { headers, body: token, signal }, await receiverRulesOf(svc)));
    },
  };
}
