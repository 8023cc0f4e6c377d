import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  cacheFile,
  defaultCacheDir,
  readCache,
  usableIdToken,
  writeCache,
  type CachedTokens,
} from '../../../../api/cli/kube/token-cache.js';

/** An unsigned JWT: the cache only reads claims (the API server checks signatures). */
const jwt = (claims: Record<string, unknown>): string =>
  ['{"alg":"ES256"}', JSON.stringify(claims), 'sig'].map((p, i) => (i < 2 ? Buffer.from(p).toString('base64url') : p)).join('.');

const NOW = 1_700_000_000_000;
const box = { issuer: 'https://box.example', client_id: 'kubectl', scope: 'openid email groups' };

describe('the kube-login token cache', function () {
  let dir: string;
  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-cache-'));
  });
  afterEach(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps one file per box and client, in ~/.cache/boxauth/kube-login unless told otherwise', function () {
    expect(defaultCacheDir({ HOME: '/home/ann' })).to.equal('/home/ann/.cache/boxauth/kube-login');
    expect(defaultCacheDir({ HOME: '/home/ann', XDG_CACHE_HOME: '/x' })).to.equal('/x/boxauth/kube-login');
    const a = cacheFile(dir, 'https://box.example', 'kubectl');
    expect(a).to.equal(cacheFile(dir, 'https://box.example', 'kubectl'));
    expect(a).to.not.equal(cacheFile(dir, 'https://box.example', 'other'));
    expect(a).to.not.equal(cacheFile(dir, 'https://other.example', 'kubectl'));
    expect(path.dirname(a)).to.equal(dir);
  });

  it('writes the tokens 0600 in a 0700 directory, and reads them back for the same box, client and scope only', function () {
    const file = cacheFile(path.join(dir, 'kube-login'), box.issuer, box.client_id);
    const tokens: CachedTokens = { ...box, id_token: jwt({ exp: 1 }), refresh_token: 'r1' };
    writeCache(file, tokens);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).to.equal(0o700);
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(readCache(file, box)).to.deep.equal(tokens);
    expect(readCache(file, { ...box, scope: 'openid' })).to.equal(undefined);
    expect(readCache(file, { ...box, client_id: 'other' })).to.equal(undefined);
    expect(readCache(path.join(dir, 'missing.json'), box)).to.equal(undefined);
    fs.writeFileSync(file, 'not json');
    expect(readCache(file, box)).to.equal(undefined);
  });

  it('hands out the cached ID token only while it has more than 10 seconds left', function () {
    const at = (exp: number) => usableIdToken({ ...box, id_token: jwt({ exp }) }, NOW);
    const now = NOW / 1000;
    expect(at(now + 600)).to.deep.include({ exp: now + 600 });
    expect(at(now + 11)).to.not.equal(undefined);
    expect(at(now + 10)).to.equal(undefined);
    expect(at(now - 1)).to.equal(undefined);
    expect(usableIdToken({ ...box, id_token: jwt({}) }, NOW)).to.equal(undefined);
    expect(usableIdToken({ ...box, id_token: 'garbage' }, NOW)).to.equal(undefined);
    expect(usableIdToken({ ...box, refresh_token: 'r' }, NOW)).to.equal(undefined);
    expect(usableIdToken(undefined, NOW)).to.equal(undefined);
  });
});
