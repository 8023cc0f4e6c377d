// From a presented access token to its session, with the caches in memory: an opaque
// token's session is cached under the token's digest, a JWT's verification under the
// token itself. A token one character off a cached one is another entry, looked up or
// verified on its own, and refused: never the cached token's session.
import { EventEmitter } from 'node:events';
import { expect } from 'chai';
import { RecordCache } from '../../../api/cache/record-cache.js';
import type { ChangeFeed } from '../../../api/db/notify.js';
import { checkAccessToken, type TokenCheckServices } from '../../../api/credentials/access-tokens.js';
import { generateKeyPair, signingKey } from '../../../api/credentials/jwt.js';
import { mint, tokenHash } from '../../../api/credentials/tokens.js';
import type { SessionRow } from '../../../api/store/sessions.js';

class FakeFeed extends EventEmitter {
  connected = true;
  onChange(table: string, handler: () => void): void {
    this.on(`change:${table}`, handler);
  }
  onReset(handler: () => void): void {
    this.on('reset', handler);
  }
}

const ISSUER = 'https://box.example';
const { privateKey, publicKey } = await generateKeyPair('ES256');
const key = signingKey('k1', 'ES256', privateKey, publicKey);

function minted(format: 'opaque' | 'jwt'): { session: SessionRow; token: string } {
  const { session, response } = mint(
    {
      type: 'client_credentials',
      origin: 'client_credentials',
      client: { resourceType: 'Client', id: 'app', grant_types: ['client_credentials'] },
      settings: { token_format: format },
      refresh: false,
    },
    ISSUER,
    key,
  );
  return { session, token: response.access_token };
}

/** `token` with its character at `i` replaced by another base64url character. */
const oneOff = (token: string, i: number): string => `${token.slice(0, i)}${token[i] === 'A' ? 'B' : 'A'}${token.slice(i + 1)}`;

describe('checkAccessToken: a cached token and its neighbours', function () {
  const opaque = minted('opaque');
  const jwt = minted('jwt');
  /** The keys the session cache asked the database for: a digest (hex) or a JWT's jti, as api/server.ts loads them. */
  const asked: string[] = [];
  const sessions = new RecordCache<SessionRow>(new FakeFeed() as unknown as ChangeFeed, 'sessions', (k) => {
    asked.push(k);
    const found = [opaque.session, jwt.session].find((s) => (k.length === 64 ? s.accessTokenHash?.toString('hex') : s.id) === k);
    return Promise.resolve(found);
  });
  const svc = {
    config: { baseUrl: ISSUER },
    keyring: { find: (kid: string) => (kid === key.kid ? key : undefined) },
    sessions,
  } as unknown as TokenCheckServices;

  it('finds an opaque token once by its digest, then from the cache', async function () {
    expect(await checkAccessToken(svc, opaque.token)).to.deep.equal({ session: opaque.session });
    expect(await checkAccessToken(svc, opaque.token)).to.deep.equal({ session: opaque.session });
    expect(asked).to.deep.equal([tokenHash(opaque.token).toString('hex')]);
  });

  it('an opaque token one character off the cached one, anywhere, or one longer or shorter, is unknown', async function () {
    const { token } = opaque;
    for (const variant of [
      oneOff(token, 0),
      oneOff(token, token.length >> 1),
      oneOff(token, token.length - 1),
      `${token}A`,
      token.slice(0, -1),
    ]) {
      expect(await checkAccessToken(svc, variant), variant).to.deep.equal({ problem: 'access token is unknown' });
      expect(asked.at(-1), 'looked up under its own digest').to.equal(tokenHash(variant).toString('hex'));
    }
    expect(await checkAccessToken(svc, token)).to.deep.equal({ session: opaque.session });
  });

  it('a JWT one character off a verified one is verified on its own, and refused', async function () {
    const { token } = jwt;
    expect(await checkAccessToken(svc, token)).to.deep.equal({ session: jwt.session });
    const signature = token.lastIndexOf('.') + 1;
    // Characters inside the signature (its last one may carry only padding bits) and the payload.
    for (const variant of [oneOff(token, signature + 10), oneOff(token, token.length - 10), oneOff(token, signature - 10)]) {
      const check = await checkAccessToken(svc, variant);
      expect('problem' in check && check.problem, variant).to.match(/signature|malformed/);
    }
    expect(await checkAccessToken(svc, token)).to.deep.equal({ session: jwt.session });
  });
});
