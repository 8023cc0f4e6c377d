// What an app's policies see of a request (docs/guides/guard-your-apps.md): the
// request as its gateway read it — method, host, the path read once
// (./path.ts), query, the headers the app lets policies test — and who is calling,
// from the token the box checked: user (as the App may see them: api/policy/claims.ts
// appPerson), client, scope, audience, and what the person's sign-in proved (amr, acr);
// and, for a JSON-RPC body (an MCP client's), the call (./jsonrpc.ts).
import { requestUser, type Act, type TxnSeen } from '../policy/requests.js';
import type { ClaimBindings } from '../policy/claims.js';
import type { JsonRpcEnvelope } from './jsonrpc.js';
import type { AppQuestion, AppSubject } from '../policy/evaluate.js';
import { isAcr, meets } from '../credentials/acr.js';
import { scopesOf } from '../credentials/scopes.js';
import type { App, PrincipalUser } from '../types.js';

/** Who is calling, as the checked credential says (nobody: all null). */
export interface Caller {
  user: PrincipalUser | null;
  client: string | null;
  scope: string | null;
  audience: string | null;
  /** The session behind the token, when there is one. */
  session: string | null;
  subject: { iss: string; sub: string } | null;
  act: Act | null;
  /** What the person's sign-in behind the token proved (RFC 8176), its class and when (seconds); null without one. */
  amr: string[] | null;
  acr: string | null;
  authTime: number | null;
  /**
   * How the token's client proved who it is when the token was issued (api/oauth/client-auth.ts
   * ClientAuthMethod, kept in the session's details); null without a token, or for a token older
   * than the record.
   */
  clientAuthMethod?: string | null;
}

export const NOBODY: Caller = {
  user: null,
  client: null,
  scope: null,
  audience: null,
  session: null,
  subject: null,
  act: null,
  amr: null,
  acr: null,
  authTime: null,
};

/**
 * What the App's claims (App.claims) are shaped over for this caller: their person, as the box's
 * own policies see them, and the grant of their token (for a subject an AuthZEN PEP names: none,
 * an empty one). Null without a person.
 */
export function claimBindingsOf(caller: Caller): ClaimBindings | null {
  if (!caller.user) return null;
  return {
    user: requestUser(caller.user),
    grant: {
      client: caller.client ?? '',
      scope: scopesOf(caller.scope),
      aud: caller.audience ? [caller.audience] : [],
      amr: caller.amr ?? [],
      acr: caller.acr ?? '',
    },
  };
}

/**
 * The question to `app`'s policies (api/policy/evaluate.ts decideApp, which makes `user`: the
 * person as the App may see them); `jsonrpc`: the call of its body, when it is JSON-RPC.
 */
export function appRequest(
  app: App,
  read: { method: string; host: string; path: string; query: Record<string, string | string[]>; txn?: TxnSeen | null },
  headers: Record<string, string | undefined>,
  caller: Caller,
  jsonrpc: JsonRpcEnvelope | null = null,
): AppQuestion {
  const shown: Record<string, string> = {};
  for (const name of app.policyHeaders ?? []) {
    const value = headers[name];
    if (value !== undefined) shown[name] = value;
  }
  const request = {
    app: app.id,
    'request-method': read.method.toLowerCase(),
    host: read.host.toLowerCase(),
    path: read.path,
    query: read.query,
    headers: shown,
    // Where the request object holds the person (key order is what records and explain show):
    // decideApp sets it to the person as the App may see them (api/policy/claims.ts appPerson).
    user: null,
    client: caller.client,
    scope: caller.scope,
    audience: caller.audience,
    subject: caller.subject,
    act: caller.act,
    amr: caller.amr,
    acr: caller.acr,
    // Only the envelope: a batch's call's id stays with the door, for the answer.
    jsonrpc: jsonrpc && { method: jsonrpc.method, tool: jsonrpc.tool },
    // The request's Txn-Token, verified (./txn.ts): the transaction this call is part of.
    txn: read.txn ?? null,
  };
  return { request, person: claimBindingsOf(caller) };
}

/**
 * Who calls, as an app's policies weigh them (api/policy/evaluate.ts decideApp): a policy's acr
 * (AccessPolicy.acr) wants a sign-in at least that strong, its scope (AccessPolicy.scope) a token
 * carrying all of it — unless `inPerson`, a person at the app in their own browser, whom no policy
 * asks for scopes (./engine.ts atAppInPerson).
 */
export function appSubjectOf(caller: Caller, inPerson = false): AppSubject {
  const have = caller.acr;
  const scopes = new Set(scopesOf(caller.scope));
  return {
    clientId: caller.client,
    user: caller.user && { id: caller.user.id, groups: caller.user.groups },
    signedInAtLeast: (want) => isAcr(have) && isAcr(want) && meets(have, want),
    carries: (want) => inPerson || want.every((s) => scopes.has(s)),
  };
}
