// The tokens of `boxauth kube-login`, one file per (box, client) in the cache
// directory (0700; files 0600, replaced atomically: kubectl may run the plugin
// several times at once). Nothing here is trusted beyond what it costs to be
// wrong: the API server checks every ID token it is shown.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeJwt } from 'jose';
import { errorMessage } from '../../errors.js';
import { writePrivateFile } from '../private-file.js';

export interface CachedTokens {
  issuer: string;
  client_id: string;
  /** The scope signed in with: another scope needs another sign-in. */
  scope: string;
  id_token?: string;
  refresh_token?: string;
}

/** An ID token with less left than this is not handed to kubectl: it could expire on its way to the API server. */
export const MIN_LIFETIME_SECONDS = 10;

export const defaultCacheDir = (env: NodeJS.ProcessEnv): string =>
  path.join(env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache'), 'boxauth', 'kube-login');

export function cacheFile(dir: string, issuer: string, clientId: string): string {
  const key = createHash('sha256')
    .update(JSON.stringify([issuer, clientId]))
    .digest('hex')
    .slice(0, 32);
  return path.join(dir, `${key}.json`);
}

/** The tokens cached for this box, client and scope; none when the file is missing or is for something else. */
export function readCache(file: string, want: Pick<CachedTokens, 'issuer' | 'client_id' | 'scope'>): CachedTokens | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read the token cache ${file}: ${errorMessage(err)}`, { cause: err });
  }
  let entry: Partial<CachedTokens> | null;
  try {
    entry = JSON.parse(text) as Partial<CachedTokens> | null;
  } catch {
    return undefined; // a file this program did not write: sign in again, and it is replaced
  }
  if (entry === null || typeof entry !== 'object') return undefined;
  if (entry.issuer !== want.issuer || entry.client_id !== want.client_id || entry.scope !== want.scope) return undefined;
  return {
    ...want,
    ...(typeof entry.id_token === 'string' ? { id_token: entry.id_token } : {}),
    ...(typeof entry.refresh_token === 'string' ? { refresh_token: entry.refresh_token } : {}),
  };
}

export function writeCache(file: string, tokens: CachedTokens): void {
  writePrivateFile(file, `${JSON.stringify(tokens, null, 2)}\n`);
}

export function forgetCache(file: string): void {
  fs.rmSync(file, { force: true });
}

/** When an ID token expires (epoch seconds) and whom it names, as far as it says (not checked: it was when cached). */
export function idTokenClaims(idToken: string): { exp?: number; sub?: string } {
  try {
    const { exp, sub } = decodeJwt(idToken);
    return { ...(typeof exp === 'number' ? { exp } : {}), ...(typeof sub === 'string' ? { sub } : {}) };
  } catch {
    return {};
  }
}

/** The cached ID token and its expiry, when it has enough life left to give kubectl. */
export function usableIdToken(tokens: CachedTokens | undefined, nowMs: number): { idToken: string; exp: number } | undefined {
  if (!tokens?.id_token) return undefined;
  const { exp } = idTokenClaims(tokens.id_token);
  if (exp === undefined || exp - nowMs / 1000 <= MIN_LIFETIME_SECONDS) return undefined;
  return { idToken: tokens.id_token, exp };
}
