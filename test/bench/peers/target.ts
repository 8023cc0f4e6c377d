// What bench-peers knows of a server under test: where its token endpoint is,
// the one request wrk sends it, and what it does for each token (so a reader of
// the table knows what a figure pays for).
import type { BenchRequest } from '../load.js';
import { tokenRequest } from '../scenarios.js';

export interface Target {
  key: string;
  title: string;
  baseUrl: string;
  /** The process whose tree is metered (its children too). */
  pid: number;
  request: BenchRequest;
  /** What one token costs it: client authentication, token format, what is written. */
  perToken: string;
  /** Throws unless a token answer is what this target should give. */
  check(body: Record<string, unknown>): void;
  stop(): Promise<void>;
}

export interface Credentials {
  id: string;
  secret: string;
}

/** The request of every target: client_credentials, HTTP Basic and a form, as `make bench` sends it. */
export const clientCredentials = (path: string, client: Credentials): BenchRequest =>
  tokenRequest(client, { grant_type: 'client_credentials' }, path);

export const isJwt = (token: unknown): boolean => typeof token === 'string' && token.split('.').length === 3;

export function expectToken(body: Record<string, unknown>, jwt: boolean): void {
  if (typeof body.access_token !== 'string') throw new Error(`no access_token in ${JSON.stringify(body).slice(0, 300)}`);
  if (isJwt(body.access_token) !== jwt)
    throw new Error(`expected ${jwt ? 'a JWT' : 'an opaque token'}, got ${body.access_token.slice(0, 80)}`);
}

/** The parts of a PostgreSQL URL that the peers take one by one. */
export function pgParts(url: string): { host: string; port: string; user: string; password: string; database: string } {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: u.port || '5432',
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password),
    database: u.pathname.slice(1),
  };
}
