// How the box talks to an OAuth provider over HTTP: https only (http to a loopback host: a provider
// on the same machine), every request cut off at UPSTREAM_TIMEOUT_MS, and whatever goes wrong said
// as an UpstreamError whose message carries no code, token or secret — the libraries' errors keep
// the request and response bodies in their `cause`, so only their fixed messages are kept.
import { errors } from 'jose';
import * as oauth from 'oauth4webapi';
import { isLoopback } from '../../mail/transport.js';
import { UPSTREAM_TIMEOUT_MS, UpstreamError } from './profile.js';
import { outboundAttributes, outboundSpan } from '../../tracing.js';

/** `raw` as a URL the box may call: https, or http to a loopback host. */
export function providerUrl(raw: string, what: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UpstreamError('invalid', `${what} is not a URL`);
  }
  if (url.protocol === 'https:' || (url.protocol === 'http:' && isLoopback(url.hostname))) return url;
  throw new UpstreamError('invalid', `${what} must be https (or http to a loopback host): ${url.origin}`);
}

/**
 * fetch with the provider's time limit (the body's reading included), no redirects followed, and a
 * provider that answers 5xx taken as down. Given to oauth4webapi and jose as their fetch.
 */
export function upstreamFetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
  const target = new URL(url);
  // A client span under the sign-in's request; the provider is given its trace context.
  return outboundSpan(init.method ?? 'GET', outboundAttributes(init.method ?? 'GET', target), (trace) =>
    fetchedFrom(url, Object.keys(trace).length === 0 ? init : { ...init, headers: withTrace(init.headers, trace) }),
  );
}

/** `headers` with the trace context's added (the caller's own kept). */
function withTrace(headers: HeadersInit | undefined, trace: Record<string, string>): Headers {
  const out = new Headers(headers);
  for (const [name, value] of Object.entries(trace)) out.set(name, value);
  return out;
}

async function fetchedFrom(url: string | URL, init: RequestInit): Promise<Response> {
  const timeout = AbortSignal.timeout(UPSTREAM_TIMEOUT_MS);
  const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
  const where = new URL(url).origin;
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal, redirect: 'manual' });
  } catch (err) {
    throw new UpstreamError(
      'unavailable',
      timedOut(err) ? `${where} gave no answer within ${UPSTREAM_TIMEOUT_MS} ms` : `${where} is unreachable`,
    );
  }
  if (response.status >= 500) {
    await response.body?.cancel();
    throw new UpstreamError('unavailable', `${where} answered ${response.status}`);
  }
  return capped(response, where);
}

/** The most a provider's answer may hold (metadata, keys, tokens, a person's claims): more is a provider gone wrong. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** The answer, read whole (within the time limit) and at most MAX_ANSWER_BYTES: no provider fills the box's memory. */
async function capped(response: Response, where: string): Promise<Response> {
  if (!response.body || [101, 204, 205, 304].includes(response.status)) return response;
  const tooLarge = (): UpstreamError => new UpstreamError('invalid', `${where} answered more than ${MAX_ANSWER_BYTES} bytes`);
  if (Number(response.headers.get('content-length')) > MAX_ANSWER_BYTES) {
    await response.body.cancel();
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body.getReader();
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      size += read.value.byteLength;
      if (size > MAX_ANSWER_BYTES) {
        await reader.cancel();
        throw tooLarge();
      }
      chunks.push(read.value);
    }
  } catch (err) {
    if (err instanceof UpstreamError) throw err;
    throw new UpstreamError(
      'unavailable',
      timedOut(err) ? `${where} gave no whole answer within ${UPSTREAM_TIMEOUT_MS} ms` : `${where} broke off`,
    );
  }
  return new Response(Buffer.concat(chunks), { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** The options of an oauth4webapi request to `url` (one providerUrl allowed). */
export function requestOptions(url: URL): { [oauth.customFetch]: typeof upstreamFetch; [oauth.allowInsecureRequests]: boolean } {
  return { [oauth.customFetch]: upstreamFetch, [oauth.allowInsecureRequests]: url.protocol === 'http:' };
}

/** GET `url` with the access token as a bearer token: a JSON object, or an UpstreamError. */
export async function fetchJson(
  url: URL,
  accessToken: string,
  what: string,
  accept = 'application/json',
): Promise<{ body: unknown; response: Response }> {
  const response = await upstreamFetch(url, { headers: { Authorization: `Bearer ${accessToken}`, Accept: accept } });
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new UpstreamError('invalid', `${what} answered ${response.status}`);
  }
  try {
    return { body: await response.json(), response };
  } catch (err) {
    throw upstreamError(err, what);
  }
}

/** Whether `err` (or what caused it) is a request cut off by its time limit. */
function timedOut(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e.name === 'TimeoutError' || e.name === 'AbortError' || e instanceof errors.JWKSTimeout) return true;
  }
  return false;
}

/**
 * The token endpoint's errors that say the box's client is not accepted (RFC 6749 §5.2:
 * invalid_client "Client authentication failed", unauthorized_client), and GitHub's own names for
 * them, which it answers with 200 (incorrect_client_credentials, redirect_uri_mismatch). A code
 * used twice or expired is invalid_grant (GitHub: bad_verification_code): the person's, not these.
 */
const CLIENT_REFUSED = new Set(['invalid_client', 'unauthorized_client', 'incorrect_client_credentials', 'redirect_uri_mismatch']);

/**
 * `err`, thrown at the token endpoint, as an UpstreamError: `misconfigured` when the provider
 * refused the box's client (its OAuth error, or 401 with a challenge), else as upstreamError says.
 */
export function tokenEndpointError(err: unknown, what: string): UpstreamError {
  if (err instanceof oauth.WWWAuthenticateChallengeError && err.status === 401)
    return new UpstreamError('misconfigured', `${what}: the provider refused the box's client (401)`);
  const said = tokenEndpointErrorCode(err);
  if (said !== undefined && CLIENT_REFUSED.has(said))
    return new UpstreamError('misconfigured', `${what}: the provider refused the box's client (${said})`);
  return upstreamError(err, what);
}

/** The OAuth error code a token endpoint answered (RFC 6749 §5.2), also in a 200 (GitHub's way), if `err` carries one. */
export function tokenEndpointErrorCode(err: unknown): string | undefined {
  if (err instanceof oauth.ResponseBodyError) return err.error;
  // An answer of 200 with an error in it: oauth4webapi keeps the body as the cause.
  const said = (err as { cause?: { body?: { error?: unknown } } } | undefined)?.cause?.body?.error;
  return err instanceof oauth.OperationProcessingError && typeof said === 'string' && /^[\x20-\x7e]{1,64}$/.test(said) ? said : undefined;
}

/** `err`, thrown while doing `what`, as an UpstreamError with a message safe to log. */
export function upstreamError(err: unknown, what: string): UpstreamError {
  if (err instanceof UpstreamError) return err;
  if (timedOut(err)) return new UpstreamError('unavailable', `${what}: no answer within ${UPSTREAM_TIMEOUT_MS} ms`);
  // The provider's OAuth error code (invalid_grant: a code used twice, expired, not its client's).
  if (err instanceof oauth.ResponseBodyError) return new UpstreamError('invalid', `${what}: the provider answered ${err.error}`);
  if (err instanceof oauth.WWWAuthenticateChallengeError)
    return new UpstreamError('invalid', `${what}: the provider answered ${err.status}`);
  if (err instanceof oauth.OperationProcessingError || err instanceof oauth.UnsupportedOperationError || err instanceof errors.JOSEError) {
    return new UpstreamError('invalid', `${what}: ${err.message}`);
  }
  return new UpstreamError('invalid', `${what}: ${err instanceof Error ? err.name : 'failed'}`);
}
