import { expect } from 'chai';
import crypto, { type JsonWebKey } from 'node:crypto';
import { RemoteKeySet } from '../../../../api/credentials/workload/keys.js';

function jwk(kid: string): JsonWebKey {
  const { publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...publicKey.export({ format: 'jwk' }), kid, use: 'sig' };
}

describe("an issuer's remote key set", function () {
  let realNow: () => number;
  let now = 1_000_000;
  before(() => {
    realNow = Date.now;
    Date.now = () => now;
  });
  after(() => {
    Date.now = realNow;
  });

  it('fetches once, then again only for an unknown kid, and at most every 10 s', async function () {
    let published = [jwk('a')];
    let fetches = 0;
    const keys = new RemoteKeySet(
      async () => published,
      () => {
        fetches++;
      },
    );
    expect(await keys.key('a')).to.not.equal(undefined);
    for (let i = 0; i < 100; i++) await keys.key('a');
    expect(fetches).to.equal(1);
    published = [jwk('a'), jwk('b')];
    expect(await keys.key('b')).to.equal(undefined); // the issuer rotated a second ago: not asked again yet
    expect(fetches).to.equal(1);
    now += 11_000;
    expect(await keys.key('b')).to.not.equal(undefined);
    expect(fetches).to.equal(2);
    for (let i = 0; i < 100; i++) await keys.key(`made-up-${i}`); // a flood of unknown kids: one fetch at most
    expect(fetches).to.equal(2);
  });

  it('answers requests that come while the first fetch is under way with its keys, in one fetch', async function () {
    let fetches = 0;
    let publish: (keys: JsonWebKey[]) => void = () => undefined;
    const keys = new RemoteKeySet(
      () => new Promise<JsonWebKey[]>((resolve) => (publish = resolve)),
      () => {
        fetches++;
      },
    );
    const asked = Array.from({ length: 5 }, () => keys.key('a'));
    publish([jwk('a')]);
    for (const key of await Promise.all(asked)) expect(key).to.not.equal(undefined);
    expect(fetches).to.equal(1);
  });

  it('reports why keys could not be fetched, and tries again later', async function () {
    let up = false;
    const keys = new RemoteKeySet(
      async () => {
        if (!up) throw new Error('connection refused');
        return [jwk('a')];
      },
      () => undefined,
    );
    let message = '';
    await keys.key('a').catch((err: Error) => {
      message = err.message;
    });
    expect(message).to.equal('connection refused');
    up = true;
    now += 2_000;
    expect(await keys.key('a')).to.not.equal(undefined);
  });
});
