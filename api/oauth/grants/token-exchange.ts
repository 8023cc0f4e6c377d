// grant_type=urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693): a client
// presents a token it holds (the subject token) and gets one for another service,
// for the same subject. With an actor token the new token records who acts for the
// subject (delegation: `act`, nested along a chain of services); without one the
// client impersonates the subject. Whether this client may exchange this token,
// for this audience, with this actor or none, is decided by the AccessPolicies
// linked to the client (docs/guides/tokens-between-services.md). An exchange only
// narrows: no scope beyond the subject token's, no audience beyond the client's
// list, no life beyond either token's. A token exchanged from a box token is a
// child of that token's session: closing the parent closes the chain.
import type { Act, ExchangeRequest, Party, TxnAsked } from '../../policy/requests.js';
import type { Client, GrantSettings } from '../../types.js';
import { grantedAudience, grantedScope, requestedAudience, type ResourceServices } from '../entitlements.js';
import { OAuthError, invalidRequest } from '../../credentials/errors.js';
import { chainFor, chainLength, checkToken, MAX_CHAIN, TOKEN_TYPE, type CheckedToken } from '../../credentials/exchange/parties.js';
import { scopesOf } from '../../credentials/scopes.js';
import { audienceParam, scopeParam, type Params } from '../params.js';
import { contextParam, extendedContext, narrowedScope, requestingWorkloads } from '../txn-request.js';
import {
  checkTxnToken,
  DEFAULT_TXN_TOKEN_LIFETIME,
  MAX_TXN_TOKEN_LIFETIME,
  newTxn,
  trustDomainOf,
  TXN_TOKEN_TYPE,
  type TxnClaims,
} from '../../credentials/txn-tokens.js';
import { mint } from '../../credentials/tokens.js';
import { shapedClaimsFor } from '../shaped-claims.js';
import type { SessionRow } from '../../store/sessions.js';
import { certificateBound, dpopBound, type Grant, type GrantContext, type GrantServices, type Issued } from './grant.js';
import { listedInGrantTypes } from '../grant-types.js';
import { withHooked } from '../token-hooks.js';

/**
 * Everything this grant does to the database (fosite's storage interfaces: a flow states the methods
 * it needs): it writes the new session, nothing else. It reads the subject and actor tokens as any
 * resource reads a token (credentials/exchange/parties.ts checkToken: the caches of sessions and people).
 */
export interface TokenExchangeStore {
  /** The session of a token exchanged from another issuer's, group-committed with others (store/session-writer.ts). */
  insertSession(svc: Pick<GrantServices, 'sessionWriter'>, session: SessionRow): Promise<void>;
  /**
   * The session of a token exchanged from a box token, as a child of that token's session, under its
   * grant lock (store/sessions.ts insertChildSessions): false, nothing written, when the parent is closed.
   */
  insertChildSession(svc: Pick<GrantServices, 'sessionWriter'>, session: SessionRow): Promise<boolean>;
  /** The subject token's person as the client's shaped claims see them (Client.claims), read afresh. */
}

const store: TokenExchangeStore = {
  insertSession: (svc, session) => svc.sessionWriter.insert(session),
  insertChildSession: (svc, session) => svc.sessionWriter.insertChild(session),
};

export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

/**
 * The token types an exchange issues (requested_token_type): an access token, opaque or JWT as the
 * client's settings say, a JWT where they say JWT, or a Transaction Token (issueTxnToken).
 */
const ISSUED: readonly string[] = [TOKEN_TYPE.accessToken, TOKEN_TYPE.jwt, TXN_TOKEN_TYPE];

export const tokenExchange: Grant = {
  type: TOKEN_EXCHANGE,
  // A public client may exchange: the subject token is the credential, and the
  // client's policies decide which subjects it takes (a CI job has only its OIDC token).
  clientAuthentication: 'if-confidential',
  requiredParameters: ['subject_token', 'subject_token_type'],
  permits: listedInGrantTypes(TOKEN_EXCHANGE),
  // RFC 8693 §2.2.2: a subject token "unacceptable based on policy" is invalid_request; a Hook is the box's policy too.
  hookRefusal: 'invalid_request',
  // It issues access tokens and Txn-Tokens, never an ID token (ISSUED).
  issuesIdTokens: false,

  /**
   * The person the subject token speaks for (none for another issuer's token), the scope and the
   * audience the exchange would have, read as the exchange reads them. A Txn-Token is asked about
   * too (a Hook may refuse it); its claims are the draft's, so a Hook's claims are not added to it.
   */
  async prospect(svc, params, client) {
    const txn = params.requested_token_type === TXN_TOKEN_TYPE;
    if (txn && params.subject_token_type === TXN_TOKEN_TYPE) {
      const check = await checkTxnToken(svc, params.subject_token!);
      if ('problem' in check) return undefined;
      const { session } = check;
      return { userId: session.userId, scope: check.claims.scope, audience: trustDomainOf(svc.config), details: session.details };
    }
    const subject = await checkToken(svc, 'subject_token', params.subject_token!, params.subject_token_type!, txn ? undefined : client);
    if (subject instanceof OAuthError) return undefined;
    try {
      const scope = exchangedScope(client, subject.party, scopeParam(params.scope));
      const audience = txn ? trustDomainOf(svc.config) : await exchangedAudience(svc, client, subject.party, params);
      return { userId: subject.session?.userId ?? null, scope, audience, details: subject.session?.details ?? null };
    } catch (err) {
      if (err instanceof OAuthError) return undefined; // the exchange refuses it, saying why
      throw err;
    }
  },

  async handle({ svc, params, client: authenticated, dpop, certificate, hooked }) {
    const client = authenticated.resource;
    const now = Date.now();
    const requestedType = params.requested_token_type || TOKEN_TYPE.accessToken;
    if (!ISSUED.includes(requestedType)) {
      throw invalidRequest(`requested_token_type "${requestedType}" is not issued here (${ISSUED.join(', ')})`);
    }
    if (requestedType === TXN_TOKEN_TYPE) return issueTxnToken({ svc, params, client: authenticated, certificate });
    const settings: GrantSettings = client.auth?.token_exchange ?? {};
    // The client's configuration chooses the format, not whoever calls with its id: an
    // opaque token is checked at the box on every use, so closing its grant stops it
    // everywhere; a JWT is also verified offline, where no close reaches it.
    if (requestedType === TOKEN_TYPE.jwt && settings.token_format !== 'jwt') {
      throw invalidRequest(
        `client "${client.id}" is given opaque access tokens (auth.token_exchange.token_format), not JWTs; ` +
          `ask for ${TOKEN_TYPE.accessToken}`,
      );
    }
    // RFC 8693 §2.1: actor_token_type is "REQUIRED when the actor_token parameter is present in the request but MUST NOT be included otherwise."
    if (params.actor_token && !params.actor_token_type) throw invalidRequest('actor_token_type is required with actor_token');
    if (!params.actor_token && params.actor_token_type) throw invalidRequest('actor_token_type is sent without actor_token');

    const subject = orRefuse(await checkToken(svc, 'subject_token', params.subject_token!, params.subject_token_type!, client));
    const unauthenticated = authenticated.method === 'none';
    if (unauthenticated && !publicMayExchange(client, subject.party)) {
      throw invalidRequest(
        `client "${client.id}" does not authenticate, so it may exchange only tokens issued to it or of another issuer; ` +
          `this subject_token was issued to client "${subject.party.client_id}"`,
      );
    }
    const actor = params.actor_token
      ? orRefuse(await checkToken(svc, 'actor_token', params.actor_token, params.actor_token_type!, client))
      : undefined;
    // A DPoP-bound token is useless without its key (RFC 9449), here too: exchanging it
    // takes a proof of that key, and the new token is bound to the same key.
    for (const [name, token] of [
      ['subject_token', subject],
      ['actor_token', actor],
    ] as const) {
      if (token?.jkt && token.jkt !== dpop?.jkt) {
        throw invalidRequest(`${name} is bound to a DPoP key: send the exchange with a DPoP proof of that key (RFC 9449)`);
      }
      certificateHeld(name, token, certificate);
    }
    const act = chainFor(subject.party, actor?.party, svc.config.baseUrl);
    if (chainLength(act) > MAX_CHAIN) throw invalidRequest(`the delegation chain would name more than ${MAX_CHAIN} actors`);

    const audience = await exchangedAudience(svc, client, subject.party, params);
    const scope = exchangedScope(client, subject.party, scopeParam(params.scope));
    const request = exchangeRequest(client, { subject: subject.party, actor: actor?.party ?? null, audience, scope, requestedType, act });
    const verdict = await svc.policies.decideExchange(client.id, request);
    if (!verdict.allowed) {
      throw invalidRequest(
        `no AccessPolicy linked to client "${client.id}" allows this exchange ` +
          `(${actor ? 'delegation' : 'impersonation: no actor_token'} of ${subject.party.kind} subject "${subject.party.sub}"` +
          `${audience ? ` for audience "${audience}"` : ''})`,
      );
    }

    const parent = subject.session;
    const recordedSubject =
      subject.party.iss !== svc.config.baseUrl ? { iss: subject.party.iss, sub: subject.party.sub } : { sub: subject.party.sub };
    // The exchanging client's shaped claims, over the person the subject token speaks for and how they signed in.
    const userId = parent?.userId ?? null;
    const shaped = await shapedClaimsFor(svc, client, { userId, scope, audience, details: parent?.details ?? null });
    const { session, response } = mint(
      {
        type: TOKEN_EXCHANGE,
        origin: 'token_exchange',
        client,
        settings,
        userId,
        audience,
        scope,
        ...(parent ? { parent } : {}),
        refresh: false,
        details: {
          subject: recordedSubject,
          ...(act ? { act } : {}),
          // A browser's sign-out ends what was obtained through it, exchanged tokens too.
          ...(typeof parent?.details?.sid === 'string' ? { sid: parent.details.sid } : {}),
        },
        subject: subject.party.sub,
        shaped: withHooked(hooked?.access, shaped),
        clientAuthMethod: authenticated.method,
        claims: {
          ...(act ? { act } : {}),
          // RFC 9493 subject identifier: whose `sub` this is when not the box's own.
          ...(recordedSubject.iss ? { sub_id: { format: 'iss_sub', ...recordedSubject } } : {}),
        },
        notAfter: earliest(subject, actor),
        ...dpopBound(dpop),
        ...certificateBound(certificate),
      },
      svc.config.baseUrl,
      svc.keyring.active,
      now,
    );
    // Under the parent's grant lock: an exchange racing the parent's close either
    // commits first and is closed with it, or finds it closed (insertChildSessions).
    if (parent && !(await store.insertChildSession(svc, session))) {
      throw invalidRequest('subject_token is not usable: access token belongs to a closed session');
    }
    if (!parent) await store.insertSession(svc, session);
    return {
      response: {
        ...response,
        // RFC 8693 §2.2.1: "issued_token_type REQUIRED"; scope when it differs from the request's, here always.
        issued_token_type: requestedType,
        ...(scope ? { scope } : {}),
      },
      session,
    };
  },
};

/**
 * The box as the Trust Domain's Transaction Token Service (draft-ietf-oauth-transaction-tokens-10
 * §10: "A Txn-Token Service (TTS) uses [RFC8693] as described in this specification to issue
 * transaction tokens"). The subject token is an access token of the box (the external endpoint's
 * inbound token, or the workload's own for a transaction it starts, §8.2), or a Txn-Token of the
 * box, which the new one replaces and may only narrow (§13.15). The requesting workload is the
 * authenticated client (`req_wl`); its linked AccessPolicies decide whether it may have this
 * Txn-Token, with this context (§13.10), deny by default. The Txn-Token is recorded as a session,
 * a child of its subject's: closing that grant ends it.
 */
/**
 * A certificate-bound token is useless without its certificate (RFC 8705 §3), here too: exchanging
 * it takes a request made with that certificate, else a thief would trade it for a token bound to
 * another certificate, or to none.
 */
function certificateHeld(name: string, token: { x5t?: string } | undefined, certificate: string | undefined): void {
  if (token?.x5t && token.x5t !== certificate) {
    throw invalidRequest(`${name} is bound to a client certificate: send the exchange with that certificate (RFC 8705)`);
  }
}

async function issueTxnToken({
  svc,
  params,
  client: authenticated,
  certificate,
}: Pick<GrantContext, 'svc' | 'params' | 'client' | 'certificate'>): Promise<Issued> {
  const client = authenticated.resource;
  const now = Date.now();
  // §11.5: "A TTS MUST authenticate a workload to ensure the workload is authorized to request a transaction token."
  if (authenticated.method === 'none') {
    throw invalidRequest(`client "${client.id}" does not authenticate: only an authenticated workload may request a Txn-Token`);
  }
  const trustDomain = trustDomainOf(svc.config);
  // §11.1: "audience REQUIRED. The value MUST be set to the Trust Domain name."; the box knows only its own.
  const audience = audienceParam(params.audience);
  if (audience !== null && audience !== trustDomain) {
    throw new OAuthError('invalid_target', `a Txn-Token is for this box's Trust Domain "${trustDomain}", not "${audience}"`);
  }
  if (params.resource) throw new OAuthError('invalid_target', "a Txn-Token names no resource: its audience is the box's Trust Domain");
  if (params.actor_token || params.actor_token_type) {
    throw invalidRequest('a Txn-Token request takes no actor_token: the requesting workload is the authenticated client (req_wl)');
  }
  // §11.1: "scope REQUIRED. ... MUST represent the specific purpose or intent of the transaction."
  const requested = scopeParam(params.scope);
  if (!requested) throw invalidRequest('scope is required for a Txn-Token: it names the purpose of the transaction');
  const requestContext = contextParam(params, 'request_context');
  const requestDetails = contextParam(params, 'request_details');

  const replacing = params.subject_token_type === TXN_TOKEN_TYPE;
  let subject: Party;
  let parent: SessionRow;
  let replaced: TxnClaims | undefined;
  let scope: string;
  let notAfter: number | null;
  if (replacing) {
    // §13.15: "MUST NOT issue a new Txn-Token when the Txn-Token being replaced has expired."
    const check = await checkTxnToken(svc, params.subject_token!, now);
    if ('problem' in check) throw invalidRequest(`subject_token is not usable: ${check.problem}`);
    replaced = check.claims;
    parent = check.session;
    subject = {
      kind: 'txn',
      iss: svc.config.baseUrl,
      sub: replaced.sub,
      aud: replaced.aud,
      scope: replaced.scope,
      claims: { ...replaced },
    };
    scope = narrowedScope(replaced.scope, requested);
    // Never beyond the Txn-Token it replaces: a replacement narrows, its life too.
    notAfter = replaced.exp * 1000;
  } else {
    const checked = orRefuse(await checkToken(svc, 'subject_token', params.subject_token!, params.subject_token_type!));
    // §9.2: `sub` "MUST be unique within the context of the `aud` Trust Domain": the box's own subjects only.
    if (checked.party.kind !== 'box' || !checked.session) {
      throw invalidRequest('subject_token for a Txn-Token must be an access token of this box (or a Txn-Token of this box, to replace it)');
    }
    certificateHeld('subject_token', checked, certificate);
    subject = checked.party;
    parent = checked.session;
    // §13.6: "MUST ensure that the requested `scope` of the Txn-Token is equal or less than the scope(s) associated with the original `subject_token`."
    scope = exchangedScope(client, subject, requested)!;
    notAfter = checked.expiresAt;
  }
  const asked: TxnAsked = { request_context: requestContext, request_details: requestDetails, replacing };
  const request = exchangeRequest(client, {
    subject,
    actor: null,
    audience: trustDomain,
    scope,
    requestedType: TXN_TOKEN_TYPE,
    act: undefined,
  });
  request.exchange.txn = asked;
  const verdict = await svc.policies.decideTxnToken(client.id, request);
  if (!verdict.allowed) {
    throw invalidRequest(
      `no AccessPolicy linked to client "${client.id}" allows this Txn-Token request ` +
        `(${replacing ? 'replacing a Txn-Token' : `${subject.kind} subject "${subject.sub}"`}, scope "${scope}"); ` +
        'a policy with a condition on exchange.requested_token_type must allow it',
    );
  }
  const lifetime = Math.min(client.auth?.token_exchange?.txn_token_lifetime ?? DEFAULT_TXN_TOKEN_LIFETIME, MAX_TXN_TOKEN_LIFETIME);
  const tctx = replaced ? extendedContext('tctx', replaced.tctx, requestDetails) : requestDetails;
  const rctx = replaced ? extendedContext('rctx', replaced.rctx, requestContext) : requestContext;
  const { session, response } = mint(
    {
      type: TOKEN_EXCHANGE,
      origin: 'txn_token',
      client,
      settings: { access_token_expiration: lifetime },
      userId: parent.userId,
      audience: trustDomain,
      scope,
      parent,
      refresh: false,
      details: {
        subject: { sub: subject.sub },
        txn: replaced?.txn ?? null,
        ...(typeof parent.details?.sid === 'string' ? { sid: parent.details.sid } : {}),
      },
      notAfter: notAfter === null ? null : new Date(notAfter),
      txn: {
        iss: svc.config.baseUrl,
        aud: trustDomain,
        // §13.15: "MUST NOT modify `txn`, `sub`, and `aud` values of the Txn-Token in the request."
        txn: replaced?.txn ?? newTxn(),
        sub: subject.sub,
        scope,
        ...(Object.keys(tctx).length ? { tctx } : {}),
        ...(Object.keys(rctx).length ? { rctx } : {}),
        req_wl: requestingWorkloads(replaced, client.id),
      },
    },
    svc.config.baseUrl,
    svc.keyring.active,
    now,
  );
  // Under the parent's grant lock, as every exchange: a Txn-Token racing its subject's close is closed with it, or not issued.
  if (!(await store.insertChildSession(svc, session))) {
    throw invalidRequest('subject_token is not usable: it belongs to a closed session');
  }
  // §11.4: "The `token_type` value MUST be set to `N_A`", "The `issued_token_type` value MUST bet set to
  // `urn:ietf:params:oauth:token-type:txn_token`", and "MUST NOT include the `refresh_token` value".
  return {
    response: {
      access_token: response.access_token,
      token_type: 'N_A',
      issued_token_type: TXN_TOKEN_TYPE,
      ...(response.expires_in !== undefined ? { expires_in: response.expires_in } : {}),
    },
    session,
  };
}

/**
 * Whether a client that did not authenticate (a public client: anyone who knows
 * its id) may exchange `subject`. A box token issued to another client is refused:
 * it would become a token of this client, acting with this client's rights (its
 * policies on the box's API), for whoever holds it. RFC 8693 §5: "Omitting client
 * authentication allows for a compromised token to be leveraged via an STS into
 * other tokens by anyone possessing the compromised token." The client's own
 * tokens stay its own, and another issuer's token (a CI job's) is all such a
 * client has: its policies decide those.
 */
export function publicMayExchange(client: Client, subject: Party): boolean {
  return subject.kind !== 'box' || subject.client_id === client.id;
}

function orRefuse(checked: CheckedToken | OAuthError): CheckedToken {
  if (checked instanceof OAuthError) throw checked;
  return checked;
}

/** The earlier of the two tokens' expiries: the new token lives no longer than what it was made from. */
function earliest(subject: CheckedToken, actor: CheckedToken | undefined): Date | null {
  const times = [subject.expiresAt, actor?.expiresAt].filter((t): t is number => typeof t === 'number');
  return times.length ? new Date(Math.min(...times)) : null;
}

/**
 * The audience of the new token: the one asked for (`audience` within the client's
 * list, or RFC 8707 `resource`, a registered resource: ../entitlements.ts
 * requestedAudience); without one, the subject token's own, so an exchange never
 * turns a token for one service into one for the box's API. invalid_target
 * otherwise (RFC 8693 §2.2.2).
 */
async function exchangedAudience(svc: ResourceServices, client: Client, subject: Party, params: Params): Promise<string | null> {
  const requested = await requestedAudience(svc, client, params);
  if (requested) return requested;
  if (subject.kind !== 'box' || subject.aud === null) return null;
  return grantedAudience(client, Array.isArray(subject.aud) ? subject.aud[0]! : subject.aud);
}

/**
 * The scope of the new token: what is asked, never beyond the subject token's
 * (a box token's scope, or a JWT's `scope` claim) nor the client's list; without
 * a request, the subject's scope as far as the client's list goes.
 */
export function exchangedScope(client: Client, subject: Party, requested: string[] | null): string | null {
  const ceiling = subject.kind === 'box' || subject.scope !== null ? scopesOf(subject.scope) : null;
  if (requested && ceiling) {
    const wider = requested.filter((s) => !ceiling.includes(s));
    if (wider.length) {
      throw new OAuthError(
        'invalid_scope',
        `an exchange may narrow the scope, not widen it: ${wider.map((s) => `"${s}"`).join(', ')} is not in the subject token's scope`,
      );
    }
  }
  if (requested) return grantedScope(client, requested);
  const kept = (ceiling ?? []).filter((s) => !client.scope || client.scope.includes(s));
  return kept.length ? kept.join(' ') : null;
}

/** The request object the client's policies see of an exchange (docs/guides/tokens-between-services.md). */
export function exchangeRequest(
  client: Client,
  e: { subject: Party; actor: Party | null; audience: string | null; scope: string | null; requestedType: string; act: Act | undefined },
): ExchangeRequest {
  return {
    'request-method': 'post',
    uri: '/auth/token',
    params: { grant_type: TOKEN_EXCHANGE },
    'query-string': '',
    client: { ...client },
    user: null,
    scope: e.scope,
    exchange: {
      subject: e.subject,
      actor: e.actor,
      delegation: e.actor !== null,
      audience: e.audience,
      scope: scopesOf(e.scope),
      requested_token_type: e.requestedType,
      ...(e.act ? { act: e.act } : {}),
    },
  };
}
