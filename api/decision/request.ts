// What an app's policies see of a request (docs/guides/guard-your-apps.md): the
// request as its gateway read it — method, host, the path read once
// (./path.ts), query, the headers the app lets policies test — and who is calling,
// from the token the box checked: user, client, scope, audience.
import type { Act } from '../credentials/exchange/parties.js';
import { requestUser, type RequestUser } from '../policy/engines.js';
import type { App, PrincipalUser } from '../types.js';

export interface AppRequest {
  app: string;
  /** Lower case (get, post…); for an AuthZEN evaluation, its action's name. */
  'request-method': string;
  /** host[:port], lower case. */
  host: string;
  /** Decoded once; never ambiguous (./path.ts refuses what would be). */
  path: string;
  query: Record<string, string | string[]>;
  /** The headers named in the App's policyHeaders, lower case; no others. */
  headers: Record<string, string>;
  user: RequestUser | null;
  /** The client the token was issued to; null without a token. */
  client: string | null;
  scope: string | null;
  audience: string | null;
  /** Whom the token is about: its issuer (the box's URL, or the issuer of an exchanged token's subject) and `sub`; null without a token. */
  subject: { iss: string; sub: string } | null;
  /** A delegated token's actors (RFC 8693 `act`, the current one first); null when nobody acts for the subject. */
  act: Act | null;
  /** AuthZEN only: the evaluation's resource and context, as sent. */
  resource?: Record<string, unknown>;
  context?: Record<string, unknown>;
}

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
}

export const NOBODY: Caller = { user: null, client: null, scope: null, audience: null, session: null, subject: null, act: null };

/** The request object of `app`'s policies. */
export function appRequest(
  app: App,
  read: { method: string; host: string; path: string; query: Record<string, string | string[]> },
  headers: Record<string, string | undefined>,
  caller: Caller,
): AppRequest {
  const shown: Record<string, string> = {};
  for (const name of app.policyHeaders ?? []) {
    const value = headers[name];
    if (value !== undefined) shown[name] = value;
  }
  return {
    app: app.id,
    'request-method': read.method.toLowerCase(),
    host: read.host.toLowerCase(),
    path: read.path,
    query: read.query,
    headers: shown,
    user: caller.user && requestUser(caller.user),
    client: caller.client,
    scope: caller.scope,
    audience: caller.audience,
    subject: caller.subject,
    act: caller.act,
  };
}
