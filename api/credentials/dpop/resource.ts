// An access token presented to a resource of the box (its API, UserInfo, the decision
// point's apps), with DPoP (RFC 9449 §7): a bound token is accepted only under the DPoP
// scheme, with a proof of its key for this very request; an unbound one only as Bearer. A token
// bound to a client certificate (RFC 8705 §3) only with that certificate.
import { challenge } from '../../errors.js';
import { type Dpop, isDpopRefusal, type DpopErrorCode } from './check.js';
import type { SessionRow } from '../../store/sessions.js';
import { checkAccessToken, type TokenCheckServices } from '../access-tokens.js';
import { DPOP_ALGS } from './proof.js';
import { boundCertificateProblem, type ClientCertificates, type PresentedCertificate } from '../client-certificate.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  dpop: Dpop;
  clientCertificates: ClientCertificates;
}

/** An access token as the Authorization header carries it. */
export interface Presented {
  scheme: 'Bearer' | 'DPoP';
  token: string;
}

/** The request the token came with, as its client addressed it (what the proof must name). */
export interface ResourceRequest {
  /** The DPoP header(s). */
  proofs: readonly string[] | undefined;
  method: string;
  url: string;
  /** The client certificate of the request (mutual TLS, RFC 8705 §3), read only for a token bound to one. */
  certificate?: () => PresentedCertificate | undefined;
}

export type ResourceServices = TokenCheckServices & Pick<Needs, 'dpop' | 'clientCertificates'>;

export type ResourceVerdict =
  | { session: SessionRow }
  | {
      problem: string;
      error: 'invalid_token' | DpopErrorCode;
      /** Answer with a DPoP challenge (the token or proof was DPoP's), else a Bearer one. */
      dpop: boolean;
      /** With use_dpop_nonce: DPoP-Nonce. */
      nonce?: string;
    };

// RFC 6750 §2.1 b64token, after either scheme (RFC 9449 §7.1: "Authorization: DPoP <token>").
const AUTHORIZATION = /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** The token of an Authorization header, and its scheme; undefined when it holds neither scheme's. */
export function presentedIn(authorization: string): Presented | undefined {
  const match = AUTHORIZATION.exec(authorization);
  if (!match) return undefined;
  return { scheme: match[1]!.toLowerCase() === 'dpop' ? 'DPoP' : 'Bearer', token: match[2]! };
}

/** Whose token this is, when it may be used as presented; or why not. */
export async function checkPresented(
  svc: ResourceServices,
  presented: Presented,
  request: ResourceRequest,
  now = Date.now(),
): Promise<ResourceVerdict> {
  const dpop = presented.scheme === 'DPoP';
  const check = await checkAccessToken(svc, presented.token, now);
  if ('problem' in check) return { problem: check.problem, error: 'invalid_token', dpop };
  const { session } = check;
  if (session.x5t !== null) {
    const problem = boundCertificateProblem(session.x5t, request.certificate?.());
    if (problem) return { problem, error: 'invalid_token', dpop };
  }
  if (session.jkt === null) {
    if (dpop) return { problem: 'the access token is not DPoP-bound: send it as "Bearer <token>"', error: 'invalid_token', dpop };
    return { session };
  }
  // "such a protected resource MUST reject a DPoP-bound access token received as a bearer
  // token" (§7.2): else a stolen bound token would work without its key.
  if (!dpop) {
    return {
      problem: 'the access token is DPoP-bound: send it as "Authorization: DPoP <token>" with a DPoP proof',
      error: 'invalid_token',
      dpop: true,
    };
  }
  const proof = await svc.dpop.check(
    request.proofs,
    { method: request.method, url: request.url, accessToken: presented.token, now },
    session.jkt,
  );
  if (isDpopRefusal(proof)) return { problem: proof.description, error: proof.error, dpop, ...(proof.nonce ? { nonce: proof.nonce } : {}) };
  return { session };
}

/** The algorithms a DPoP challenge offers (§7.1 `algs`). */
const ALGS = `algs="${DPOP_ALGS.join(' ')}"`;

/** A DPoP challenge (RFC 9449 §7.1) for `realm`: with the error, when there is one, then `params` (a gate's resource_metadata). */
export function dpopChallenge(realm: string, refusal?: { error: string; problem: string }, ...params: string[]): string {
  return challenge('DPoP', realm, refusal && { error: refusal.error, description: refusal.problem }, ALGS, ...params);
}
