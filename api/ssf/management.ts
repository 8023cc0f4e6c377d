// The stream management API (SSF 1.0 §8.1) for one receiver: what each request does, and its
// errors as the spec lists them (400 a request it cannot act on, 404 a stream the receiver does not
// have, 409 a receiver at its number of streams, 429 a verification asked for too soon). A
// receiver reaches only its own streams: every store call names it, so another receiver's stream
// is "not found" and says nothing of its existence.
import { randomBytes } from 'node:crypto';
import { ApiError, notFound } from '../errors.js';
import { withTransaction, type Pool } from '../db/pool.js';
import { receiverRulesOf, receiverUrlProblem } from '../notices/post.js';
import { enqueueNotice } from '../store/notices.js';
import {
  acknowledgePollSets,
  createStream as insertStream,
  deleteStream as removeStream,
  getStream,
  markVerificationRequested,
  setStreamStatus,
  setStreamSubject,
  streamsOf,
  updateStream as writeStream,
  waitingPollSets,
  type StreamFields,
  type StreamRow,
} from '../store/ssf-streams.js';
import { findUserByEmail } from '../store/users.js';
import { personOfSubject } from '../credentials/presented-subjects.js';
import { verificationNotice } from './kind.js';
import { mayReceive, type ReceiverNeeds } from './receivers.js';
import {
  MIN_VERIFICATION_INTERVAL,
  patchedConfiguration,
  PUSH,
  statusChange,
  statusJson,
  streamIdOf,
  streamJson,
  streamRequest,
  wholeConfiguration,
} from './streams.js';
import { personNamed } from './subjects.js';
import type { Config } from '../config.js';
import { badRequest } from '../errors.js';

/**
 * The most streams one receiver may have: enough for a receiver per tenant's few streams, few
 * enough that a receiver flooding stream creation fills no table (issue 55, attacks tried).
 */
export const STREAMS_PER_RECEIVER = 10;

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
export interface ManagementNeeds extends ReceiverNeeds {
  config: Pick<Config, 'baseUrl' | 'notices'>;
  pool: Pool;
}

/** A stream the receiver does not have (another receiver's too): SSF 1.0 §8.1.1.2's 404. */
const noStream = (): ApiError => notFound('stream');

/** A query's stream_id: absent, or one string. */
function queriedStreamId(query: unknown): string | undefined {
  if (query === undefined) return undefined;
  if (typeof query !== 'string' || !query || query.length > 200) throw badRequest('stream_id must be given once, as a stream id');
  return query;
}

/**
 * A push endpoint the outbox would refuse to reach (loopback, a private or special-use range, the
 * box itself, unless the box's settings allow it) is refused now, with its reason, and again at
 * each send (its name may resolve elsewhere by then).
 */
async function checkedDelivery(svc: ManagementNeeds, fields: StreamFields): Promise<StreamFields> {
  if (fields.deliveryMethod !== PUSH || fields.endpointUrl === null) return fields;
  const why = await receiverUrlProblem(fields.endpointUrl, await receiverRulesOf(svc));
  if (why !== undefined) throw badRequest(`delivery.endpoint_url ${why}`);
  return fields;
}

const newStreamId = (): string => randomBytes(16).toString('base64url');

/** SSF 1.0 §8.1.1.1: create a stream; 201 with its configuration. */
export async function createStream(svc: ManagementNeeds, receiver: string, body: unknown): Promise<Record<string, unknown>> {
  const fields = await checkedDelivery(svc, wholeConfiguration(streamRequest(body)));
  const made = await withTransaction(svc.pool, (tx) => insertStream(tx, newStreamId(), receiver, fields, STREAMS_PER_RECEIVER));
  if (!made)
    throw new ApiError(
      409,
      'conflict',
      `this receiver has ${STREAMS_PER_RECEIVER} streams, the most a receiver may have: delete one (DELETE ?stream_id=…) before making another`,
    );
  return streamJson(svc.config.baseUrl, made);
}

/** SSF 1.0 §8.1.1.2: one stream (stream_id), or all the receiver's (an empty list when none). */
export async function readStreams(svc: ManagementNeeds, receiver: string, query: unknown): Promise<unknown> {
  const id = queriedStreamId(query);
  if (id === undefined) return (await streamsOf(svc.pool, receiver)).map((s) => streamJson(svc.config.baseUrl, s));
  const stream = await getStream(svc.pool, receiver, id);
  if (!stream) throw noStream();
  return streamJson(svc.config.baseUrl, stream);
}

/** SSF 1.0 §8.1.1.3 (PATCH, `whole` false) and §8.1.1.4 (PUT, `whole` true): 200 with the configuration. */
export async function changeStream(
  svc: ManagementNeeds,
  receiver: string,
  body: unknown,
  whole: boolean,
): Promise<Record<string, unknown>> {
  const request = streamRequest(body);
  const id = streamIdOf(request);
  const stream = await getStream(svc.pool, receiver, id);
  if (!stream) throw noStream();
  const fields = await checkedDelivery(svc, whole ? wholeConfiguration(request) : patchedConfiguration(request, stream));
  const written = await writeStream(svc.pool, receiver, id, fields);
  if (!written) throw noStream();
  return streamJson(svc.config.baseUrl, written);
}

/** SSF 1.0 §8.1.1.5: delete a stream (204); what waits for it goes with it. */
export async function deleteStream(svc: ManagementNeeds, receiver: string, query: unknown): Promise<void> {
  const id = queriedStreamId(query);
  if (id === undefined) throw badRequest('stream_id is required: the id of the stream to delete');
  if (!(await removeStream(svc.pool, receiver, id))) throw noStream();
}

async function streamOf(svc: ManagementNeeds, receiver: string, id: string): Promise<StreamRow> {
  const stream = await getStream(svc.pool, receiver, id);
  if (!stream) throw noStream();
  return stream;
}

/** SSF 1.0 §8.1.2.1: a stream's status. */
export async function readStatus(svc: ManagementNeeds, receiver: string, query: unknown): Promise<Record<string, unknown>> {
  const id = queriedStreamId(query);
  if (id === undefined) throw badRequest('stream_id is required: the id of the stream whose status to read');
  return statusJson(await streamOf(svc, receiver, id));
}

/** SSF 1.0 §8.1.2.2: change a stream's status (200, the status as it now is). */
export async function changeStatus(svc: ManagementNeeds, receiver: string, body: unknown): Promise<Record<string, unknown>> {
  const change = statusChange(body);
  const stream = await setStreamStatus(svc.pool, receiver, change.streamId, change.status, change.reason);
  if (!stream) throw noStream();
  return statusJson(stream);
}

/** The stream and person a subject request names: {stream_id, subject}; the person undefined when the box has nobody by that name. */
async function subjectRequest(
  svc: ManagementNeeds,
  receiver: string,
  body: unknown,
): Promise<{ stream: StreamRow; user: number | undefined }> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('send {"stream_id", "subject"} as a JSON object');
  const request = body as Record<string, unknown>;
  const stream = await streamOf(svc, receiver, streamIdOf(request));
  const named = personNamed(svc.config.baseUrl, request.subject);
  if (typeof named === 'string') throw badRequest(named);
  if (named === undefined) return { stream, user: undefined };
  if ('email' in named) return { stream, user: (await findUserByEmail(svc.pool, named.email))?.id };
  // A sub as the receiver's client is given them (api/credentials/subjects.ts): another client's names nobody.
  const client = await svc.clients.get(receiver);
  if (!client) return { stream, user: undefined };
  // Nor is a sub read under a sector the receiver names but whose document does not list it (as the
  // authorization endpoint refuses it): else it would name people by another party's subs.
  const refusal = await svc.sectorRefusal(client.resource);
  if (refusal) throw badRequest(refusal);
  return { stream, user: await personOfSubject(svc, client.resource, named.sub) };
}

/**
 * SSF 1.0 §8.1.3.1: add a subject (200). A person the receiver's policies do not let it have, like
 * nobody of that name, is silently not added ("the Transmitter MAY choose to silently ignore the
 * request"): the answer says nothing of who has an account here.
 */
export async function addSubject(svc: ManagementNeeds, receiver: string, body: unknown): Promise<void> {
  const { stream, user } = await subjectRequest(svc, receiver, body);
  if (user === undefined || !(await mayReceive(svc, receiver, stream.id, user))) return;
  await setStreamSubject(svc.pool, stream.id, user, true);
}

/** SSF 1.0 §8.1.3.2: remove a subject (204): no event about them is sent on the stream any more. */
export async function removeSubject(svc: ManagementNeeds, receiver: string, body: unknown): Promise<void> {
  const { stream, user } = await subjectRequest(svc, receiver, body);
  if (user !== undefined) await setStreamSubject(svc.pool, stream.id, user, false);
}

/**
 * SSF 1.0 §8.1.4.2: a verification request (204), answered by a verification event sent as the
 * stream's events are, echoing `state`; one within min_verification_interval of the last is 429.
 */
export async function requestVerification(svc: ManagementNeeds, receiver: string, body: unknown): Promise<void> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('send {"stream_id", "state"} as a JSON object');
  const request = body as Record<string, unknown>;
  const id = streamIdOf(request);
  const state = request.state;
  if (state !== undefined && (typeof state !== 'string' || state.length > 1000))
    throw badRequest('state must be a string of at most 1000 characters');
  await streamOf(svc, receiver, id);
  await withTransaction(svc.pool, async (tx) => {
    if (!(await markVerificationRequested(tx, receiver, id, MIN_VERIFICATION_INTERVAL)))
      throw new ApiError(
        429,
        'too_many_requests',
        `ask for a verification event at most every ${MIN_VERIFICATION_INTERVAL} seconds (min_verification_interval)`,
        {
          'Retry-After': String(MIN_VERIFICATION_INTERVAL),
        },
      );
    await enqueueNotice(tx, 'ssf', verificationNotice(receiver, id, state));
  });
}

/** RFC 8936 §2.4: a poll request's ack, maxEvents and returnImmediately. */
function pollRequest(body: unknown): { ack: string[]; maxEvents: number } {
  if (body === undefined) return { ack: [], maxEvents: 100 };
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('send the poll request as a JSON object');
  const request = body as Record<string, unknown>;
  const ack = request.ack ?? [];
  if (!Array.isArray(ack) || ack.length > 1000 || !ack.every((a) => typeof a === 'string' && a.length <= 200))
    throw badRequest('ack must be an array of jti (at most 1000)');
  const max = request.maxEvents ?? 100;
  if (typeof max !== 'number' || !Number.isInteger(max) || max < 0 || max > 1000)
    throw badRequest('maxEvents must be an integer from 0 to 1000');
  return { ack: ack as string[], maxEvents: max };
}

/**
 * RFC 8936 §2.4: a poll. The SETs acknowledged go; up to maxEvents waiting ones are answered, by
 * jti (`sets`), with `moreAvailable`. The box answers at once (returnImmediately is how it always
 * answers: a long poll would hold a request).
 */
export async function poll(svc: ManagementNeeds, receiver: string, streamId: string, body: unknown): Promise<Record<string, unknown>> {
  const request = pollRequest(body);
  const stream = await streamOf(svc, receiver, streamId);
  if (stream.deliveryMethod !== 'urn:ietf:rfc:8936') throw badRequest('this stream is delivered by push, not poll');
  await acknowledgePollSets(svc.pool, stream.id, request.ack);
  const { sets, more } = await waitingPollSets(svc.pool, stream.id, request.maxEvents);
  return { sets: Object.fromEntries(sets.map((s) => [s.jti, s.token])), moreAvailable: more };
}
