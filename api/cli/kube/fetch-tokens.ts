// Getting a new ID token when the cached one will not do: a refresh, silently;
// else, when a person is there, a new sign-in (browser, or --device). One run at a
// time per cache file (lock.ts). This module loads undici and the sign-in flows,
// so the command imports it only on a cache miss: kubectl runs the plugin for
// every command, and most runs end at the cache.
import fs from 'node:fs';
import { CliError } from '../api.js';
import type { Io } from '../command.js';
import { BoxClient, TokenRefused, type SignedIn } from './box-client.js';
import { signInWithDevice } from './device.js';
import { withLock } from './lock.js';
import { signInWithBrowser } from './loopback.js';
import { forgetCache, idTokenClaims, readCache, usableIdToken, writeCache, type CachedTokens } from './token-cache.js';

export interface LoginOptions {
  box: string;
  client: string;
  caFile: string | undefined;
  scope: string;
  device: boolean;
  listenPort: number;
  openBrowser: boolean;
  cacheDir: string;
  /** The cache file of this box and client, in cacheDir. */
  cacheFile: string;
  timeoutMs: number;
  /** This very run as a command line, for a person to run when kubectl cannot ask them. */
  byHand: string;
}

export async function fetchIdToken(o: LoginOptions, io: Io, interactive: boolean): Promise<{ idToken: string; exp: number }> {
  const want = { issuer: o.box, client_id: o.client, scope: o.scope };
  fs.mkdirSync(o.cacheDir, { recursive: true, mode: 0o700 });
  return withLock(`${o.cacheFile}.lock`, o.timeoutMs + 30_000, async () => {
    // Another run may have refreshed while this one waited for the lock.
    const tokens = readCache(o.cacheFile, want);
    const fresh = usableIdToken(tokens, Date.now());
    if (fresh) return fresh;
    const box = await BoxClient.connect(o.box, o.client, o.caFile);
    try {
      const keep = (signedIn: SignedIn, refreshToken?: string): { idToken: string; exp: number } => {
        const entry: CachedTokens = { ...want, id_token: signedIn.idToken };
        const refresh = signedIn.refreshToken ?? refreshToken;
        writeCache(o.cacheFile, refresh ? { ...entry, refresh_token: refresh } : entry);
        return { idToken: signedIn.idToken, exp: signedIn.exp };
      };
      let why = tokens ? 'the ID token expired, and there is no refresh token to renew it' : 'not signed in yet';
      if (tokens?.refresh_token) {
        try {
          const sub = tokens.id_token ? idTokenClaims(tokens.id_token).sub : undefined;
          return keep(await box.refresh(tokens.refresh_token, sub), tokens.refresh_token);
        } catch (err) {
          if (!(err instanceof TokenRefused)) throw err;
          forgetCache(o.cacheFile);
          why = `the box refused the refresh token: ${err.message}`;
        }
      }
      if (!interactive) {
        throw new CliError(`sign-in needed (${why}): run kubectl in a terminal, or \`${o.byHand}\` by hand`);
      }
      if (tokens) io.err(`${why}; sign in again.\n`);
      const signedIn = o.device
        ? await signInWithDevice(box, { scope: o.scope, timeoutMs: o.timeoutMs, err: io.err })
        : await signInWithBrowser(box, { ...o, env: io.env, err: io.err });
      io.err(`Signed in to ${o.box}.\n`);
      return keep(signedIn);
    } finally {
      await box.close();
    }
  });
}
