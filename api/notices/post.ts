// The one way the box sends an HTTP request to a receiver of its notices (a back-channel logout
// URI, an SSF push endpoint, a Webhook's URL): the address is someone else's choice, so it is held
// to the rules of api/outbound.ts, as the fetch of a Client ID Metadata Document is:
// - https; plain http only to an address the box's settings allow (a receiver in the cluster,
//   a test's);
// - every address the name resolves to is checked in the lookup the connection itself uses
//   (DNS rebinding cannot pass): no special-use or private range, loopback, or address of this
//   machine, unless allowed (BOXAUTH_NOTICE_ALLOWED_ADDRESSES, or PUT /settings/notices at
//   runtime); never the box itself by its own host and port;
// - no redirect is followed (a 3xx is an answer like any other: the kind decides);
// - a deadline on the whole exchange (the caller's signal, and the box's own timeout), and at
//   most MAX_ANSWER_BYTES of the answer read: a slow or chatty receiver holds nothing long.
// The same checks run when a receiver registers its URL (receiverUrlProblem), so a URL refused is
// refused when written and again when sent (its name may resolve elsewhere by then); a URL an
// administrator writes is checked for its shape then, and for its addresses at each send
// (administeredUrlProblem says why).
import dns from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { NoticeConfig } from '../config.js';
import type { Queryable } from '../db/pool.js';
import { addressAllowed, addressProblem, guardedLookup, literalAddress, parseCidr, type AddressRules } from '../outbound.js';
import { readNoticeAllowedAddresses } from '../store/notices.js';
import { outboundAttributes, outboundSpan } from '../tracing.js';

/** The most of a receiver's answer that is read (the rest is dropped with the connection). */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** What a POST to a receiver is held to: the ranges allowed, the box's own URL, the longest it may take. */
export interface ReceiverRules extends AddressRules {
  boxUrl: string;
  timeoutMs: number;
}

/**
 * The rules of `svc`'s box in force now: BOXAUTH_NOTICE_ALLOWED_ADDRESSES and the runtime setting
 * (PUT /settings/notices), read at each use so that a change on any process holds at once. Each
 * box's own, from its services: a host serves many boxes in one process, and one box's allow-list
 * (or its URL) must never be another's.
 */
export async function receiverRulesOf(svc: {
  config: { baseUrl: string; notices: Pick<NoticeConfig, 'allowedAddresses' | 'timeoutMs'> };
  pool: Queryable;
}): Promise<ReceiverRules> {
  const { notices, baseUrl } = svc.config;
  return {
    allowed: [
      ...notices.allowedAddresses,
      ...(await readNoticeAllowedAddresses(svc.pool)).map(parseCidr).filter((c): c is [string, number] => c !== undefined),
    ],
    boxUrl: baseUrl,
    timeoutMs: notices.timeoutMs,
  };
}

/** Why a POST to a receiver failed before an answer: refused by the rules, unreachable, too slow. Never a secret. */
export class ReceiverError extends Error {}

/** A receiver's answer: its status, media type and at most MAX_ANSWER_BYTES of its body. */
export interface ReceiverAnswer {
  status: number;
  contentType: string | undefined;
  body: string;
  /** The body was longer than what was read. */
  cut: boolean;
}

export interface ReceiverRequest {
  headers: Record<string, string>;
  body: string | Buffer;
  /** Aborts the request (the sender's deadline); without it, the rules' timeoutMs alone (one timer less a request). */
  signal?: AbortSignal;
  /** The certificates the receiver's is checked against (PEM), in place of the system's: a Hook's caBundle. */
  ca?: string;
  /**
   * Connections kept between requests to one receiver (a Hook's: asked at every token, a TLS
   * handshake each would cost more than the call). Each is made through the guarded lookup, so its
   * address was checked when it was made. Default none: every request resolves and checks anew.
   */
  agent?: https.Agent;
}

/** The box by its own host and port, whatever the scheme and whatever its address. */
function isTheBox(target: URL, rules: ReceiverRules): boolean {
  const box = new URL(rules.boxUrl);
  if (target.host === box.host) return true;
  const port = (u: URL): string => u.port || (u.protocol === 'https:' ? '443' : '80');
  return port(target) === port(box) && ['localhost', '127.0.0.1', '[::1]'].includes(target.hostname);
}

/** Why `url` cannot be a receiver, judged without resolving it (scheme, credentials, the box itself, a literal address); undefined: it may be. */
export function receiverUrlShapeProblem(url: string, rules: ReceiverRules): string | undefined {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return 'is not a URL';
  }
  if (target.protocol !== 'https:' && target.protocol !== 'http:') return 'must be an https URL';
  if (target.username || target.password) return 'must not carry a user or password';
  if (target.hash) return 'must not have a fragment';
  if (isTheBox(target, rules)) return 'is the box itself';
  const literal = literalAddress(target);
  if (literal) {
    const problem = addressProblem(literal, rules);
    if (problem) return `is refused: ${problem}`;
    if (target.protocol === 'http:' && !addressAllowed(literal, rules))
      return 'must be an https URL (http only to an address the box allows)';
  }
  return undefined;
}

/** Every address: what an administrator's URL is judged against when written (administeredUrlProblem). */
const ANY_ADDRESS: [string, number][] = [
  ['0.0.0.0', 0],
  ['::', 0],
];

/**
 * The check of a receiver's URL an administrator writes (a Client's backchannel_logout_uri, a
 * Webhook's url, through the REST API or Kubernetes): its shape, and never the box itself. Its
 * addresses are judged at each send, against the allow-list of that moment: a declarative record
 * (GitOps, the operator) must not fail on what a name resolves to when it is applied, on the order
 * records are applied in (a Client before its relying party's Service), or on an allow-list its
 * writer cannot read. A send refused gives the notice up with an audit event, counted in
 * boxauth_notices_total{result="given_up"} and alerted on. A URL a receiver writes itself (an SSF
 * stream's push endpoint) is held to receiverUrlProblem, addresses and all.
 */
export function administeredUrlProblem(url: string, boxUrl: string): string | undefined {
  return receiverUrlShapeProblem(url, { allowed: ANY_ADDRESS, boxUrl, timeoutMs: 0 });
}

/**
 * The registration-time check of a receiver's URL (a Webhook's URL, a stream's push endpoint, a
 * client's backchannel_logout_uri): its shape, and every address its name resolves to now. A URL
 * refused here is refused again at each send. Answers a sentence to follow the field's name
 * ("backchannel_logout_uri is the box itself"), or undefined when it may be used.
 */
export async function receiverUrlProblem(url: string, r: ReceiverRules): Promise<string | undefined> {
  const shape = receiverUrlShapeProblem(url, r);
  if (shape) return shape;
  const target = new URL(url);
  if (literalAddress(target)) return undefined;
  let addresses: { address: string }[];
  try {
    addresses = await dns.lookup(target.hostname, { all: true });
  } catch {
    return `names a host that does not resolve (${target.hostname})`;
  }
  for (const { address } of addresses) {
    const problem = addressProblem(address, r);
    if (problem) return `is refused: ${problem}`;
    if (target.protocol === 'http:' && !addressAllowed(address, r)) return 'must be an https URL (http only to an address the box allows)';
  }
  return addresses.length ? undefined : `names a host that has no address (${target.hostname})`;
}

/** The lookup a connection to a receiver uses: every address checked, http only to allowed ones. */
function receiverLookup(rules: ReceiverRules, plain: boolean): ReturnType<typeof guardedLookup> {
  const refuse = (why: string): Error => new ReceiverError(why);
  if (!plain) return guardedLookup(rules, refuse);
  // http: only ranges the box allows, which addressProblem passes, so the allowed list is the whole rule.
  const onlyAllowed: AddressRules = { allowed: rules.allowed };
  const guarded = guardedLookup(onlyAllowed, refuse);
  return (hostname, options, callback) =>
    guarded(hostname, { ...options, all: true }, (err, addresses, family) => {
      if (err) return callback(err, '', 4);
      const list = addresses as unknown as { address: string; family: number }[];
      const outside = list.find((a) => !addressAllowed(a.address, onlyAllowed));
      if (outside) return callback(refuse(`${outside.address} is not an address the box allows plain http to`), '', 4);
      if (options.all) return callback(null, list, family);
      return callback(null, list[0]!.address, list[0]!.family);
    });
}

/**
 * POSTs `body` to the receiver at `url` under the box's rules (see the top of this file), and
 * answers what it said, whatever the status: the kind judges the answer. Throws a ReceiverError
 * when the URL is refused, the receiver cannot be reached, or no whole answer came before the
 * deadline (`signal`, or the box's BOXAUTH_NOTICE_TIMEOUT_MS, whichever is first).
 */
export async function postToReceiver(url: string, request: ReceiverRequest, rules: ReceiverRules): Promise<ReceiverAnswer> {
  const problem = receiverUrlShapeProblem(url, rules);
  if (problem) throw new ReceiverError(`the receiver's URL ${problem}`);
  const target = new URL(url);
  const plain = target.protocol === 'http:';
  if (request.signal?.aborted) throw new ReceiverError('the deadline passed before the request was made');
  // A hook, a webhook, a logout token: its span is a child of what sent it, and the receiver is given the trace.
  return outboundSpan('POST', outboundAttributes('POST', target), (trace) => posted(target, plain, trace, request, rules));
}

async function posted(
  target: URL,
  plain: boolean,
  trace: Record<string, string>,
  request: ReceiverRequest,
  rules: ReceiverRules,
): Promise<ReceiverAnswer> {
  // The box's deadline is a timer cleared once the answer is read: one left to fire seconds after
  // each request (AbortSignal.timeout) is paid for at every request under load (make bench, hooks).
  let late = false;
  let timer: NodeJS.Timeout | undefined;
  const deadline = (): ReceiverError => new ReceiverError('no whole answer before the deadline');
  try {
    return await new Promise<ReceiverAnswer>((resolve, reject) => {
      const body = typeof request.body === 'string' ? Buffer.from(request.body) : request.body;
      const req = (plain ? http : https).request(
        target,
        {
          method: 'POST',
          headers: { ...trace, ...request.headers, 'Content-Length': String(body.length) },
          lookup: receiverLookup(rules, plain),
          ...(request.ca !== undefined && !plain ? { ca: request.ca } : {}),
          // No connection is kept or shared unless the caller keeps them: each request resolves and checks the name afresh.
          agent: (!plain && request.agent) || false,
          ...(request.signal ? { signal: request.signal } : {}),
        },
        (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          let cut = false;
          const answer = (): void =>
            resolve({
              status: response.statusCode ?? 0,
              contentType: response.headers['content-type'],
              body: Buffer.concat(chunks).toString('utf8'),
              cut,
            });
          response.on('data', (chunk: Buffer) => {
            if (cut) return;
            const room = MAX_ANSWER_BYTES - size;
            chunks.push(chunk.subarray(0, room));
            size += Math.min(room, chunk.length);
            if (chunk.length > room) {
              cut = true;
              answer();
              req.destroy();
            }
          });
          response.on('end', answer);
          response.on('error', () => reject(late ? deadline() : new ReceiverError('the answer broke off')));
        },
      );
      timer = setTimeout(() => {
        late = true;
        req.destroy(deadline());
      }, rules.timeoutMs).unref();
      req.on('error', (err) =>
        reject(
          err instanceof ReceiverError
            ? err
            : late || request.signal?.aborted
              ? deadline()
              : new ReceiverError(`it could not be reached (${(err as NodeJS.ErrnoException).code ?? err.name})`),
        ),
      );
      req.end(body);
    });
  } finally {
    clearTimeout(timer);
  }
}
