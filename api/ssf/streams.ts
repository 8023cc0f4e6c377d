// A stream's configuration (SSF 1.0 §8.1.1), pure: what a receiver's create, update (PATCH) or
// replace (PUT) says, checked; and the configuration as the transmitter answers it. A receiver
// sets description, events_requested and delivery; the transmitter supplies the rest (stream_id,
// iss, aud, events_supported, events_delivered, min_verification_interval), and ignores them in a
// request ("Transmitter-Supplied properties", §8.1.1).
import { badRequest } from '../errors.js';
import { EVENTS_SUPPORTED } from './events.js';
import type { DeliveryMethod, StreamFields, StreamRow, StreamStatus } from '../store/ssf-streams.js';

export const PUSH: DeliveryMethod = 'urn:ietf:rfc:8935';
export const POLL: DeliveryMethod = 'urn:ietf:rfc:8936';

/** SSF 1.0 §8.1.4.1 min_verification_interval: seconds a receiver waits between two verification requests. */
export const MIN_VERIFICATION_INTERVAL = 5;

const TRANSMITTER_SUPPLIED = new Set([
  'stream_id',
  'iss',
  'aud',
  'events_supported',
  'events_delivered',
  'min_verification_interval',
  'inactivity_timeout',
]);
const RECEIVER_SUPPLIED = new Set(['description', 'events_requested', 'delivery']);

/** A request the transmitter cannot act on: SSF's 400 (§8.1.1.1 "the request cannot be parsed"), with what to fix. */
const problem = (message: string): never => {
  throw badRequest(message);
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The body of a stream request: a JSON object, or a 400. */
export function streamRequest(body: unknown): Record<string, unknown> {
  if (!isObject(body)) return problem('send the stream configuration as a JSON object');
  for (const name of Object.keys(body))
    if (!TRANSMITTER_SUPPLIED.has(name) && !RECEIVER_SUPPLIED.has(name)) problem(`"${name}" is not a property of a stream configuration`);
  return body;
}

/** The stream a request names (SSF 1.0 §8.1.1.3: stream_id is required in an update and a replace). */
export function streamIdOf(body: Record<string, unknown>): string {
  const id = body.stream_id;
  if (typeof id !== 'string' || !id || id.length > 200) return problem('stream_id is required: the id of the stream to change');
  return id;
}

function description(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length > 1000) return problem('description must be a string of at most 1000 characters');
  return v;
}

function eventsRequested(v: unknown): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.length > 100 || !v.every((e) => typeof e === 'string' && e.length > 0 && e.length <= 500))
    return problem('events_requested must be an array of event type URIs (at most 100)');
  return [...new Set(v as string[])];
}

/** The receiver's credential for its push endpoint: sent as the Authorization header, so one line of visible ASCII. */
function authorizationHeader(v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || !/^[\x20-\x7e]{1,4096}$/.test(v))
    return problem('delivery.authorization_header must be one line of printable ASCII');
  return v;
}

type Delivery = Pick<StreamFields, 'deliveryMethod' | 'endpointUrl' | 'authorizationHeader'>;

/**
 * RFC 8935 push: the receiver's endpoint_url, an absolute https URL (http only where the box's
 * settings allow its address: checked after this, by the outbox's check); RFC 8936 poll: the
 * transmitter supplies endpoint_url, so a receiver's is ignored. A request without delivery is poll.
 */
function delivery(v: unknown): Delivery {
  if (v === undefined) return { deliveryMethod: POLL, endpointUrl: null, authorizationHeader: null };
  if (!isObject(v)) return problem('delivery must be an object with a "method"');
  for (const name of Object.keys(v))
    if (!['method', 'endpoint_url', 'authorization_header'].includes(name)) problem(`"delivery.${name}" is not a property of a delivery`);
  if (v.method === POLL) return { deliveryMethod: POLL, endpointUrl: null, authorizationHeader: null };
  if (v.method !== PUSH) return problem(`delivery.method must be ${PUSH} (push) or ${POLL} (poll)`);
  const url = v.endpoint_url;
  if (typeof url !== 'string' || url.length > 2000 || !URL.canParse(url))
    return problem('push delivery needs delivery.endpoint_url, an absolute URL');
  const parsed = new URL(url);
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return problem('delivery.endpoint_url must be an https URL');
  if (parsed.username || parsed.password)
    return problem('delivery.endpoint_url must not carry credentials: send them as delivery.authorization_header');
  if (parsed.hash) return problem('delivery.endpoint_url must not have a fragment');
  return { deliveryMethod: PUSH, endpointUrl: url, authorizationHeader: authorizationHeader(v.authorization_header) };
}

/** A create or a replace (PUT): every receiver-supplied property, those absent at their defaults. */
export function wholeConfiguration(body: Record<string, unknown>): StreamFields {
  return {
    description: description(body.description),
    eventsRequested: eventsRequested(body.events_requested),
    ...delivery(body.delivery),
  };
}

/** An update (PATCH): the properties present replace the stream's, the others stay. */
export function patchedConfiguration(body: Record<string, unknown>, stream: StreamFields): StreamFields {
  return {
    description: 'description' in body ? description(body.description) : stream.description,
    eventsRequested: 'events_requested' in body ? eventsRequested(body.events_requested) : stream.eventsRequested,
    ...('delivery' in body ? delivery(body.delivery) : pick(stream)),
  };
}

const pick = ({ deliveryMethod, endpointUrl, authorizationHeader }: StreamFields): Delivery => ({
  deliveryMethod,
  endpointUrl,
  authorizationHeader,
});

/** SSF 1.0 §8.1.1: events_delivered, "the intersection of events_supported and events_requested". */
export const eventsDelivered = (requested: readonly string[]): string[] => EVENTS_SUPPORTED.filter((e) => requested.includes(e));

/** Where a poll stream's receiver fetches its SETs (RFC 8936 §2: the transmitter supplies it). */
export const pollEndpoint = (baseUrl: string, streamId: string): string => `${baseUrl}/ssf/poll/${encodeURIComponent(streamId)}`;

/**
 * The stream as the transmitter answers it (SSF 1.0 §8.1.1). The push endpoint's
 * authorization_header is the receiver's secret: it is kept to be sent, never answered.
 */
export function streamJson(baseUrl: string, stream: StreamRow): Record<string, unknown> {
  return {
    stream_id: stream.id,
    iss: baseUrl,
    aud: stream.clientId,
    events_supported: [...EVENTS_SUPPORTED],
    events_requested: stream.eventsRequested,
    events_delivered: eventsDelivered(stream.eventsRequested),
    delivery:
      stream.deliveryMethod === PUSH
        ? { method: PUSH, endpoint_url: stream.endpointUrl }
        : { method: POLL, endpoint_url: pollEndpoint(baseUrl, stream.id) },
    min_verification_interval: MIN_VERIFICATION_INTERVAL,
    ...(stream.description !== null ? { description: stream.description } : {}),
  };
}

const STATUSES: readonly StreamStatus[] = ['enabled', 'paused', 'disabled'];

/** SSF 1.0 §8.1.2.2: an update of a stream's status, {stream_id, status, reason?}. */
export function statusChange(body: unknown): { streamId: string; status: StreamStatus; reason: string | null } {
  if (!isObject(body)) return problem('send the status as a JSON object {"stream_id", "status"}');
  const streamId = streamIdOf(body);
  const status = body.status;
  if (typeof status !== 'string' || !(STATUSES as readonly string[]).includes(status))
    return problem('status must be enabled, paused or disabled');
  const reason = body.reason;
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > 1000))
    return problem('reason must be a string of at most 1000 characters');
  return { streamId, status: status as StreamStatus, reason: reason ?? null };
}

/** SSF 1.0 §8.1.2.1: a stream's status as the transmitter answers it. */
export const statusJson = (stream: StreamRow): Record<string, unknown> => ({
  stream_id: stream.id,
  status: stream.status,
  ...(stream.statusReason !== null ? { reason: stream.statusReason } : {}),
});
