// Transaction Tokens (Txn-Tokens), draft-ietf-oauth-transaction-tokens-10 (29 July 2026): the
// box as the Trust Domain's Transaction Token Service. A Txn-Token is a short-lived JWT the box
// signs with its access-token key, so that every workload of the call chain verifies it with the
// box's JWKS alone. What a Txn-Token says (its claims), and how one presented is read: the
// exchange that issues one is api/oauth/grants/token-exchange.ts, the decision point reads one in
// api/decision/request.ts.
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.js';
import type { Keyring } from './keyring.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { SessionRow } from '../store/sessions.js';
import { JwtError, verifyJwtOnce } from './jwt.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  keyring: Keyring;
  sessions: RecordCache<SessionRow>;
}

export type TxnTokenServices = Pick<Needs, 'config' | 'keyring' | 'sessions'>;

/** §16.1: "URN: urn:ietf:params:oauth:token-type:txn_token", the requested_token_type and issued_token_type of a Txn-Token. */
export const TXN_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:txn_token';

/** §9.1: "The `typ` Header Parameter MUST be present and MUST have the value `txntoken+jwt`." */
export const TXN_TOKEN_TYP = 'txntoken+jwt';

/** §12.1: the HTTP header a Txn-Token travels in between workloads ("Txn-Token"), lower case as Node reads headers. */
export const TXN_TOKEN_HEADER = 'txn-token';

/**
 * How long a Txn-Token lives (seconds). §6: "Txn-Tokens are expected to be short-lived (on the
 * order of minutes or less)"; a client's auth.token_exchange.txn_token_lifetime chooses within
 * MAX_TXN_TOKEN_LIFETIME.
 */
export const DEFAULT_TXN_TOKEN_LIFETIME = 300;
export const MAX_TXN_TOKEN_LIFETIME = 900;

/** The claims of a Txn-Token (§9.2), as the box signs them and a workload reads them. */
export interface TxnClaims {
  /** §11.3: "MAY set the `iss` claim": the box's URL, so a workload knows whose JWKS verifies it (§13.16). */
  iss: string;
  iat: number;
  /** The Trust Domain: "A Txn-Token MUST NOT be accepted outside the Trust Domain identified by the `aud` claim." */
  aud: string;
  exp: number;
  /** "A unique transaction identifier as defined in Section 2.2 of [RFC8417]": kept by every replacement. */
  txn: string;
  sub: string;
  scope: string;
  /** "values that remain immutable throughout the Call Chain" (from request_details). */
  tctx?: Record<string, unknown>;
  /** "the environmental context of the requested transaction" (from request_context). */
  rctx?: Record<string, unknown>;
  /** "identifies the workload that requested the Txn-Token": the client ids, comma-separated, the first requester first (replacements append). */
  req_wl: string;
  /** The box session the Txn-Token is recorded as: closing its subject's grant ends it too. */
  jti: string;
}

/** A fresh transaction identifier (RFC 8417 §2.2 `txn`: unique; a UUID, as the draft's example). */
export const newTxn = (): string => randomUUID();

/** The Trust Domain the box's Txn-Tokens are for (their `aud`): the box's issuer URL. */
export const trustDomainOf = (config: Pick<Config, 'baseUrl'>): string => config.baseUrl;

/** A Txn-Token presented (a replacement's subject_token, a request's Txn-Token header), read and checked, or why not. */
export type TxnTokenCheck = { claims: TxnClaims; session: SessionRow } | { problem: string };

/**
 * Checks a presented Txn-Token as §12.2 says a workload does ("Validate the Txn-Token JWS signature.
 * Verify the `aud` claim identifies the Trust Domain of the workload. Verify the Txn-Token is not
 * expired."), and, since the box issued it, that the session it is recorded as is still open: a
 * Txn-Token made from a grant closed since is refused, as that grant's access tokens are.
 */
export async function checkTxnToken(svc: TxnTokenServices, token: string, now = Date.now()): Promise<TxnTokenCheck> {
  let header: { typ?: unknown };
  let claims: Record<string, unknown>;
  try {
    ({ header, claims } = verifyJwtOnce(token, svc.keyring.find));
  } catch (err) {
    return { problem: err instanceof JwtError ? err.message : 'malformed JWT' };
  }
  if (header.typ !== TXN_TOKEN_TYP) return { problem: `the JWT is not a Txn-Token (typ ${TXN_TOKEN_TYP})` };
  if (claims.aud !== trustDomainOf(svc.config)) return { problem: 'the Txn-Token is for another Trust Domain (aud)' };
  if (typeof claims.exp !== 'number' || claims.exp * 1000 <= now) return { problem: 'the Txn-Token has expired' };
  for (const name of ['txn', 'sub', 'scope', 'req_wl', 'jti'] as const) {
    if (typeof claims[name] !== 'string') return { problem: `the Txn-Token has no ${name}` };
  }
  const session = await svc.sessions.get(claims.jti as string);
  if (!session?.active) return { problem: 'the Txn-Token belongs to a closed session' };
  return { claims: claims as unknown as TxnClaims, session };
}

/** Whether a presented JWT says it is a Txn-Token (its header's typ), read without verifying: which refusal to give. */
export function saysTxnToken(token: string): boolean {
  try {
    const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')) as { typ?: unknown };
    return header.typ === TXN_TOKEN_TYP;
  } catch {
    return false;
  }
}
