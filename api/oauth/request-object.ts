// Request objects (RFC 9101, JAR): an authorization request's parameters as a JWT the client signed
// with one of its own keys (its jwks or jwks_uri: the keys of its client assertions,
// ./client-assertion.ts), sent by value in `request` to /auth/authorize or pushed to /auth/par. Only
// the object's parameters count (RFC 9101 §6.3: "The authorization server MUST only use the
// parameters in the Request Object even if the same parameter is provided in the query parameter"),
// and client_id outside must name the client that signed it. An object is taken once: its jti (or,
// without one, the object itself) is spent in the replay ledger client assertions and DPoP proofs
// share. By value, the request read is then held as a pushed request claimed by the browser
// (./par.ts holdRequest), so that the way back from sign-in and consent names it and the object is never read
// twice; a browser that brings the same object again is refused as a replay.
import { createHash } from 'node:crypto';
import { CLIENT_ASSERTION_ALGS, keyAlgProblem } from '../client-keys.js';
import { signatureVerifies } from '../credentials/dpop/proof.js';
import { tokenHash } from '../credentials/tokens.js';
import type { SeenProof } from '../store/dpop-proofs.js';
import type { Client } from '../types.js';
import { textProblem } from '../input.js';
import { AssertionRefused, assertionAlg, jwtParts, SKEW_SECONDS, typProblem, type ClientAssertions } from './client-assertion.js';
import { LIMITS } from './params.js';

/** What reading a request object uses: the client's keys and the replay ledger, and the box's issuer identifier. */
export interface RequestObjectServices {
  config: { baseUrl: string };
  clientAssertions: Pick<ClientAssertions, 'keyOf' | 'spend'>;
}

/** RFC 9101 §10.8: the explicit type of a request object (or the generic "JWT", or none). */
export const REQUEST_OBJECT_TYP = 'oauth-authz-req+jwt';

/** The algorithms a request object may be signed with: those of client assertions (none, HS* and RS256 refused). */
export const REQUEST_OBJECT_ALGS = CLIENT_ASSERTION_ALGS;

/**
 * The longest an object may be valid from nbf (or from now) to exp. FAPI 2.0 Message Signing §5.3.2:
 * "shall reject request objects where the exp claim is more than 60 minutes after the nbf claim".
 */
export const REQUEST_OBJECT_MAX_LIFETIME_SECONDS = 3600;

/** An object read: its parameters (client_id among them) and the proof to spend once it is taken. */
export interface RequestObjectRead {
  params: Record<string, string>;
  proof: SeenProof;
}

/**
 * Why an object is refused. `signed`: its signature verified with the client's key, so its
 * redirect_uri is the client's own word and the refusal may travel back there; else the refusal is
 * a page (nothing in the object can be trusted, and the parameters outside it do not count).
 */
export interface RequestObjectRefusal {
  problem: string;
  signed: boolean;
  /** A signed object's parameters, as far as they could be read: where and how its refusal goes back. */
  params?: Record<string, string>;
}

/**
 * The request object `token` of `client`, checked now (all but replay: spendRequestObject), or why it
 * is refused. `names`: the authorization request's parameters (./authorization-request.ts), the
 * claims of the object that are read as parameters.
 */
export async function readRequestObject(
  svc: RequestObjectServices,
  client: Client,
  token: string,
  names: readonly string[],
  nowMs: number,
): Promise<RequestObjectRead | RequestObjectRefusal> {
  const unsigned = (problem: string): RequestObjectRefusal => ({ problem, signed: false });
  // As long as any OAuth parameter may be (at PAR, ./params.ts holds `request` to it already); a form
  // POSTed to /auth/authorize may be 256 kB, whose JSON, read before any signature is checked, and
  // nested claims (JSON.stringify below walks them by recursion) no object needs.
  if (token.length > LIMITS.value) return unsigned(`the request object is longer than ${LIMITS.value} characters`);
  const jwt = jwtParts(token, 'request');
  // RFC 9101 §4: "alg: none" is an unsigned object; the box takes only signed ones (discovery says which algorithms).
  if ('problem' in jwt) return unsigned(jwt.problem);
  const typed = typProblem(jwt, 'the request object', REQUEST_OBJECT_TYP);
  if (typed) return unsigned(typed);
  if (jwt.header.alg === 'none')
    return unsigned(`the request object is unsigned (alg none): sign it with ${REQUEST_OBJECT_ALGS.join(', ')}`);
  const alg = assertionAlg(jwt);
  if (typeof alg !== 'string')
    return unsigned(
      `the request object's alg ${JSON.stringify(jwt.header.alg)} is not accepted: sign it with ${REQUEST_OBJECT_ALGS.join(', ')}`,
    );
  if (client.request_object_signing_alg !== undefined && alg !== client.request_object_signing_alg)
    return unsigned(
      `client "${client.id}" signs its request objects with ${client.request_object_signing_alg} (request_object_signing_alg), not ${alg}`,
    );
  const kid = jwt.header.kid;
  if (kid !== undefined && typeof kid !== 'string') return unsigned('the request object names its key with a kid that is not a string');
  let key;
  try {
    key = await svc.clientAssertions.keyOf(client, kid);
  } catch (err) {
    if (err instanceof AssertionRefused) return unsigned(`the request object's key: ${err.message}`);
    throw err;
  }
  const keyProblem = keyAlgProblem(alg, key);
  if (keyProblem) return unsigned(`the request object's alg does not fit the client's key: ${keyProblem}`);
  if (!signatureVerifies({ alg, key }, jwt.signingInput, jwt.signature))
    return unsigned(`the request object's signature does not verify with the keys of client "${client.id}"`);
  const { params, problem } = parametersOf(jwt.payload, names);
  const claims = claimsProblem(jwt.payload, client.id, svc.config.baseUrl, Math.floor(nowMs / 1000)) ?? problem;
  if (claims) return { problem: claims, signed: true, params: { ...params, client_id: client.id } };
  // Spent per client, as a client assertion's jti; without a jti the object itself is what is used
  // once: its header and claims as signed, not the whole JWS, whose signature may be spelled many
  // ways (base64url's spare bits and padding, which decode to the same bytes; ECDSA's s and n - s).
  const { jti, exp } = jwt.payload as { jti?: string; exp: number };
  const digest = createHash('sha256')
    .update(`request_object.${JSON.stringify([client.id, jti ?? tokenHash(jwt.signingInput.toString()).toString('base64url')])}`)
    .digest();
  return { params: { ...params, client_id: client.id }, proof: { digest, expiresAt: new Date((exp + SKEW_SECONDS + 1) * 1000) } };
}

/** Spends an object's proof: false when it was taken before (a replay), wherever in the box. */
export const spendRequestObject = (svc: RequestObjectServices, read: RequestObjectRead): Promise<boolean> =>
  svc.clientAssertions.spend(read.proof);

/** The refusal of an object taken before. */
export const REPLAYED_OBJECT = 'the request object was used before: make a new one (a new jti) for each request';

/** Why the object's claims do not make it one of `clientId` for this box now; undefined when they do. */
function claimsProblem(claims: Record<string, unknown>, clientId: string, issuer: string, now: number): string | undefined {
  const { iss, aud, exp, nbf, jti } = claims;
  // RFC 9101 §4: "If signed, the Authorization Request Object SHOULD contain the Claims iss (issuer) and
  // aud (audience) as members"; iss "MUST be the client_id of the OAuth Client", aud "SHOULD be the
  // value of the authorization server (AS) issuer". Both required: one made for another server is not
  // taken here.
  if (iss !== clientId) return `the request object's iss must be the client_id "${clientId}"`;
  const audiences = Array.isArray(aud) ? aud : [aud];
  if (!audiences.includes(issuer)) return `the request object's aud must be this box's issuer identifier "${issuer}"`;
  // RFC 9101 §5: "the client_id ... MUST be present" outside; inside, when present, it must be the same.
  if (claims.client_id !== undefined && claims.client_id !== clientId)
    return `the request object's client_id is not the request's client_id "${clientId}"`;
  if (typeof exp !== 'number') return 'the request object has no exp: it must say until when it may be used';
  if (exp + SKEW_SECONDS <= now) return `the request object expired at ${new Date(exp * 1000).toISOString()}`;
  if (nbf !== undefined) {
    if (typeof nbf !== 'number') return "the request object's nbf must be a number of seconds";
    if (nbf - SKEW_SECONDS > now) return 'the request object is not valid yet (nbf is ahead): check the clocks';
    if (now - nbf > REQUEST_OBJECT_MAX_LIFETIME_SECONDS + SKEW_SECONDS)
      return 'the request object is too old (nbf is more than 60 minutes ago)';
  }
  if (exp - (typeof nbf === 'number' ? nbf : now) > REQUEST_OBJECT_MAX_LIFETIME_SECONDS + SKEW_SECONDS)
    return 'the request object is valid for too long: exp may be at most 60 minutes after nbf (or now)';
  if (jti !== undefined && (typeof jti !== 'string' || !jti.length || jti.length > 256))
    return "the request object's jti must be a string of 1 to 256 characters";
  return undefined;
}

/**
 * The authorization parameters of an object's claims, each a string as in a query; a claim that is
 * no parameter (iss, aud, exp…) is left out. OpenID Connect Core §6.1: claims is a JSON object in an
 * object and max_age a number; RFC 9101 §4: it "MUST NOT include the request and request_uri parameters".
 * Each value is held to what a parameter sent outside an object must be (../input.ts, ./params.ts
 * LIMITS): the edge never saw them, and a NUL would fail the INSERT of the request held or pushed.
 * `problem`: the first that is wrong; `params`: those that are not, where its refusal goes back.
 */
function parametersOf(claims: Record<string, unknown>, names: readonly string[]): { params: Record<string, string>; problem?: string } {
  const params: Record<string, string> = {};
  let problem: string | undefined;
  if (claims.request !== undefined || claims.request_uri !== undefined)
    problem = 'a request object must not hold request or request_uri (RFC 9101 §4)';
  for (const [name, value] of Object.entries(claims)) {
    if (!names.includes(name) || value === undefined || value === null) continue;
    let text: string | undefined;
    if (typeof value === 'string') text = value;
    else if (typeof value === 'number' && Number.isSafeInteger(value)) text = String(value);
    else if (name === 'claims' && typeof value === 'object' && !Array.isArray(value)) text = JSON.stringify(value);
    else if (name === 'resource' && Array.isArray(value) && value.length === 1 && typeof value[0] === 'string') text = value[0];
    const wrong =
      text === undefined ? `is not a string${name === 'resource' ? ' (one resource per request)' : ''}` : textProblem(text, LIMITS.value);
    if (text === undefined || wrong) problem ??= `the request object's ${name} ${wrong}`;
    else params[name] = text;
  }
  return problem ? { params, problem } : { params };
}
