// grant_type=client_credentials (RFC 6749 §4.4): a confidential client gets a token for itself.
import { grantedScope, requestedAudience } from '../entitlements.js';
import { scopeParam } from '../params.js';
import { mint } from '../../credentials/tokens.js';
import type { SeenProof } from '../../store/dpop-proofs.js';
import type { SessionRow } from '../../store/sessions.js';
import { certificateBound, dpopBound, type Grant, type GrantServices } from './grant.js';
import { listedInGrantTypes } from '../grant-types.js';

/** Everything this grant does to the database (fosite's storage interfaces: a flow states the methods it needs). */
export interface ClientCredentialsStore {
  /** The session of the new token, group-committed with others (store/session-writer.ts): resolves once committed. */
  insertSession(svc: Pick<GrantServices, 'sessionWriter'>, session: SessionRow): Promise<void>;
  /** The same, spending the client's assertion's jti in its statement: false, nothing written, for a replay. */
  insertSessionSpending(svc: Pick<GrantServices, 'sessionWriter'>, session: SessionRow, spend: SeenProof): Promise<boolean>;
}

const store: ClientCredentialsStore = {
  insertSession: (svc, session) => svc.sessionWriter.insert(session),
  insertSessionSpending: (svc, session, spend) => svc.sessionWriter.insertSpending(session, spend),
};

export const clientCredentials: Grant = {
  type: 'client_credentials',
  clientAuthentication: 'required',
  requiredParameters: [],
  permits: listedInGrantTypes('client_credentials'),
  // The token's one write spends a private_key_jwt assertion's jti too: one round trip, not two (make bench).
  assertionSpending: 'with-session',

  async prospect(_svc, params, client) {
    return { userId: null, scope: grantedScope(client, scopeParam(params.scope)), audience: null, details: null };
  },

  async handle({ svc, params, client: { resource: client, workload, federated, spiffe, method, unspent }, dpop, certificate, hooked }) {
    const settings = client.auth?.client_credentials ?? {};
    const { session, response } = mint(
      {
        type: 'client_credentials',
        origin: 'client_credentials',
        client,
        settings,
        // `audience` (a name, held to the client's list) or `resource` (RFC 8707 §2.2: "for all grant types", a registered resource).
        audience: await requestedAudience(svc, client, params),
        scope: grantedScope(client, scopeParam(params.scope)),
        refresh: settings.refresh_token === true,
        // The session records which ServiceAccount (and Pod), which subject of another issuer, or which
        // SPIFFE ID (a binding may be a prefix) obtained a workload's token.
        details: workload ? { workload } : federated ? { federated } : spiffe ? { spiffe } : null,
        clientAuthMethod: method,
        ...(hooked ? { shaped: hooked.access } : {}),
        ...dpopBound(dpop),
        ...certificateBound(certificate),
      },
      svc.config.baseUrl,
      svc.keyring.active,
    );
    // The answer leaves only once the session is committed: a token we sent always works. With an
    // assertion, only if its jti was not spent before (OpenID Connect Core §9: "The JWT MUST NOT be reused").
    if (!unspent) await store.insertSession(svc, session);
    else if (!(await store.insertSessionSpending(svc, session, unspent.proof))) throw unspent.replayed();
    return { response, session };
  },
};
