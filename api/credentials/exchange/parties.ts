// The parties of a token exchange (RFC 8693): the subject token names whom the
// new token is for, the actor token who acts for them. Each presented token comes
// to a Party: what the box knows of it once checked, and what an AccessPolicy sees
// of it (docs/guides/tokens-between-services.md: the request object). A token the
// box cannot check is refused as RFC 8693 §2.2.2 says: "If ... either the
// subject_token or actor_token are invalid for any reason, or are unacceptable
// based on policy, ... the value of the error parameter MUST be the
// invalid_request error code."
import { requestUser, type Act, type Party } from '../../policy/requests.js';
import type { RecordCache } from '../../cache/record-cache.js';
import type { PrincipalUser } from '../../types.js';
import { subjectFor, type SubjectClient, type SubjectSettings } from '../subjects.js';
import type { SessionRow } from '../../store/sessions.js';
import { checkAccessToken, type TokenCheckServices } from '../access-tokens.js';
import { invalidRequest, type OAuthError } from '../errors.js';
import { looksLikeJwt } from '../jwt.js';
import { serviceAccountOf, verifyTrustedJwt, type WorkloadServices } from '../workload/assertion.js';
import { WorkloadError } from '../workload/issuers.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  users: RecordCache<PrincipalUser>;
  subjects: SubjectSettings;
}

/** RFC 8693 §3: the token type identifiers the box takes and issues. */
export const TOKEN_TYPE = {
  accessToken: 'urn:ietf:params:oauth:token-type:access_token',
  jwt: 'urn:ietf:params:oauth:token-type:jwt',
  idToken: 'urn:ietf:params:oauth:token-type:id_token',
} as const;
const TAKEN: readonly string[] = Object.values(TOKEN_TYPE);

/** A delegation chain longer than this is refused: no honest chain of services is that deep. */
export const MAX_CHAIN = 8;

/** A Party and what the exchange needs of it beyond what policies see. */
export interface CheckedToken {
  party: Party;
  /** A box token's session: the exchanged token's parent. */
  session?: SessionRow;
  /** When the token stops being valid (ms), if it does. */
  expiresAt: number | null;
  /** The DPoP key the token is bound to (RFC 9449: a box session's jkt, a JWT's cnf.jkt): only its holder may exchange it. */
  jkt?: string;
  /** The client certificate the token is bound to (RFC 8705 §3: a box session's x5t, a JWT's cnf x5t#S256): likewise. */
  x5t?: string;
}

export type PartyServices = TokenCheckServices &
  Pick<WorkloadServices, 'issuers' | 'verifiedAssertions'> &
  Pick<Needs, 'users' | 'subjects'>;

/** The `act` a box session records (a token exchanged before), if any. */
export function actOf(details: Record<string, unknown> | null): Act | undefined {
  const act = details?.act;
  return act && typeof act === 'object' ? (act as Act) : undefined;
}

/** Who a box session's token is about: a token exchange records its subject; otherwise its person or client. */
export function subjectOf(session: Pick<SessionRow, 'userId' | 'clientId' | 'details'>): { iss?: string; sub: string } {
  const recorded = session.details?.subject as { iss?: string; sub?: string } | undefined;
  if (recorded && typeof recorded.sub === 'string') return { ...(recorded.iss ? { iss: recorded.iss } : {}), sub: recorded.sub };
  return { sub: session.userId !== null ? String(session.userId) : session.clientId };
}

/**
 * The `act` of another issuer's token, as that issuer's word: each actor keeps
 * only `sub`, `client_id` and `iss`, and one without `iss` is the issuer's own
 * (it cannot pass for an actor of this box). A malformed chain is refused, not
 * shortened: an exchange never hides who acted before.
 */
export function foreignAct(value: unknown, issuer: string, depth = 0): Act | undefined {
  if (value === undefined) return undefined;
  if (depth > MAX_CHAIN) throw new WorkloadError(`the token's act claim names more than ${MAX_CHAIN} actors`);
  const { sub, iss, client_id: clientId, act } = (value ?? {}) as Record<string, unknown>;
  if (typeof value !== 'object' || Array.isArray(value) || typeof sub !== 'string') {
    throw new WorkloadError("the token's act claim is malformed: each actor is an object with a sub");
  }
  const inner = foreignAct(act, issuer, depth + 1);
  return {
    sub,
    iss: typeof iss === 'string' ? iss : issuer,
    ...(typeof clientId === 'string' ? { client_id: clientId } : {}),
    ...(inner ? { act: inner } : {}),
  };
}

/** How many actors a chain names. */
export function chainLength(act: Act | undefined): number {
  let n = 0;
  for (let a = act; a; a = a.act) n++;
  return n;
}

/** A JWT's claims, unverified (which issuer to check it with; or, once checked, its own `exp`). */
function claimsOf(token: string): { iss?: unknown; exp?: unknown } {
  try {
    return (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as { iss?: unknown; exp?: unknown }) ?? {};
  } catch {
    return {};
  }
}

/**
 * Checks `token`, presented as `name` (subject_token, actor_token) with type
 * `type`. A box access token (opaque, or a JWT the box signed) must be live: its
 * session open and unexpired. A JWT of another issuer must be one the box trusts,
 * issued for this box (its audience) and within its times. A box token's person is named as
 * `presenter`, the client exchanging it, sees them (api/credentials/subjects.ts): client A's
 * pairwise sub never reaches client B, not even in a refusal.
 */
export async function checkToken(
  svc: PartyServices,
  name: string,
  token: string,
  type: string,
  presenter?: SubjectClient,
): Promise<CheckedToken | OAuthError> {
  if (!TAKEN.includes(type)) {
    return invalidRequest(`${name}_type "${type}" is not one this box takes (${TAKEN.join(', ')})`);
  }
  const jwt = looksLikeJwt(token) ? claimsOf(token) : undefined;
  if (!jwt || jwt.iss === svc.config.baseUrl) {
    if (type === TOKEN_TYPE.idToken) return invalidRequest(`${name}: an ID token of this box is not a credential; send its access token`);
    const check = await checkAccessToken(svc, token);
    if ('problem' in check) return invalidRequest(`${name} is not usable: ${check.problem}`);
    // A JWT of a session may end before it (the decision point's upstream token for an
    // app lives a minute): the token presented, not its session, is what the new one may not outlive.
    return boxParty(svc, check.session, typeof jwt?.exp === 'number' ? jwt.exp * 1000 : null, presenter);
  }
  try {
    const { issuer, payload } = await verifyTrustedJwt(svc, token);
    const account = serviceAccountOf(issuer, payload);
    const act = foreignAct(payload.act, issuer);
    const party: Party = {
      kind: account ? 'serviceaccount' : 'jwt',
      iss: issuer,
      sub: String(payload.sub ?? ''),
      aud: (payload.aud as string | string[] | undefined) ?? null,
      scope: typeof payload.scope === 'string' ? payload.scope : null,
      ...(act ? { act } : {}),
      ...(account ? { namespace: account.namespace, serviceAccount: account.serviceAccount } : {}),
      claims: payload,
    };
    if (!party.sub) return invalidRequest(`${name} names no subject (sub)`);
    const cnf = payload.cnf as { jkt?: unknown; 'x5t#S256'?: unknown } | undefined;
    const jkt = cnf?.jkt;
    const x5t = cnf?.['x5t#S256'];
    return {
      party,
      expiresAt: typeof payload.exp === 'number' ? payload.exp * 1000 : null,
      ...(typeof jkt === 'string' ? { jkt } : {}),
      ...(typeof x5t === 'string' ? { x5t } : {}),
    };
  } catch (err) {
    if (err instanceof WorkloadError) return invalidRequest(`${name} is not usable: ${err.message}`);
    throw err;
  }
}

async function boxParty(
  svc: PartyServices,
  session: SessionRow,
  tokenExpiresAt: number | null,
  presenter: SubjectClient | undefined,
): Promise<CheckedToken | OAuthError> {
  const user = session.userId !== null ? await svc.users.get(String(session.userId)) : undefined;
  if (session.userId !== null && !user) return invalidRequest('the person of this token no longer exists');
  const recorded = session.details?.subject as { iss?: string } | undefined;
  const sub = user && presenter && !recorded?.iss ? subjectFor(svc.subjects, presenter, user) : subjectOf(session).sub;
  const act = actOf(session.details);
  return {
    party: {
      kind: 'box',
      iss: recorded?.iss ?? svc.config.baseUrl,
      sub,
      client_id: session.clientId,
      ...(user ? { user: requestUser(user) } : {}),
      aud: session.audience,
      scope: session.scope,
      ...(act ? { act } : {}),
    },
    session,
    expiresAt: earlier(session.exp?.getTime() ?? null, tokenExpiresAt),
    ...(session.jkt ? { jkt: session.jkt } : {}),
    ...(session.x5t ? { x5t: session.x5t } : {}),
  };
}

/** The earlier of two times, either of which may be none (never). */
function earlier(a: number | null, b: number | null): number | null {
  return a === null ? b : b === null ? a : Math.min(a, b);
}

/**
 * The `act` of the exchanged token: the actor, with the subject's own chain
 * nested in it (RFC 8693 §4.1). Without an actor (impersonation) the subject's
 * chain stays as it was: an exchange never hides who acted before.
 */
export function chainFor(subject: Party, actor: Party | undefined, box: string): Act | undefined {
  if (!actor) return subject.act;
  return {
    sub: actor.sub,
    ...(actor.iss !== box ? { iss: actor.iss } : {}),
    ...(actor.client_id ? { client_id: actor.client_id } : {}),
    ...(subject.act ? { act: subject.act } : {}),
  };
}
