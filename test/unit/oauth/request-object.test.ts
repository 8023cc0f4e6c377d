import { expect } from 'chai';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { readRequestObject, type RequestObjectRead, type RequestObjectServices } from '../../../api/oauth/request-object.js';
import { AUTHORIZE_PARAMS } from '../../../api/oauth/authorization-request.js';
import type { Client } from '../../../api/types.js';

const ISSUER = 'https://box.example';
const NOW = 1_800_000_000;
const client = { id: 'app' } as Client;

describe('readRequestObject: what an object of a client must be, and what it asks', function () {
  let privateKey: CryptoKey;
  let key: KeyObject;
  let svc: RequestObjectServices;

  before(async function () {
    const pair = await generateKeyPair('ES256', { extractable: true });
    privateKey = pair.privateKey;
    key = createPublicKey({ key: await exportJWK(pair.publicKey), format: 'jwk' });
    svc = { config: { baseUrl: ISSUER }, clientAssertions: { keyOf: async () => key, spend: async () => true } };
  });

  const sign = (claims: Record<string, unknown>): Promise<string> =>
    new SignJWT({ iss: 'app', aud: ISSUER, exp: NOW + 60, ...claims }).setProtectedHeader({ alg: 'ES256' }).sign(privateKey);
  const read = async (claims: Record<string, unknown>) => readRequestObject(svc, client, await sign(claims), AUTHORIZE_PARAMS, NOW * 1000);
  const problem = async (claims: Record<string, unknown>): Promise<string> => {
    const r = await read(claims);
    return 'problem' in r ? r.problem : 'taken';
  };

  it("reads its parameters as a query's: a number and the claims object as strings, one resource, JWT claims left out", async function () {
    const r = (await read({
      response_type: 'code',
      max_age: 60,
      claims: { id_token: { email: null } },
      resource: ['https://api.example'],
      jti: 'j',
      nbf: NOW,
    })) as RequestObjectRead;
    expect(r.params).to.deep.equal({
      response_type: 'code',
      max_age: '60',
      claims: '{"id_token":{"email":null}}',
      resource: 'https://api.example',
      client_id: 'app',
    });
  });

  it('without a jti the object itself is what is spent: two objects, two proofs; one object, one', async function () {
    const one = await sign({ state: 'a' });
    const [x, y] = await Promise.all([readRequestObject(svc, client, one, AUTHORIZE_PARAMS, NOW * 1000), read({ state: 'b' })]);
    const again = await readRequestObject(svc, client, one, AUTHORIZE_PARAMS, NOW * 1000);
    expect((x as RequestObjectRead).proof.digest).to.deep.equal((again as RequestObjectRead).proof.digest);
    expect((x as RequestObjectRead).proof.digest).to.not.deep.equal((y as RequestObjectRead).proof.digest);
  });

  it('refuses by name: nbf ahead, valid for over 60 minutes, no exp, another iss, request inside, several resources', async function () {
    expect(await problem({ nbf: NOW + 600 })).to.include('not valid yet');
    expect(await problem({ nbf: NOW, exp: NOW + 7200 })).to.include('valid for too long');
    expect(await problem({ exp: undefined })).to.include('no exp');
    expect(await problem({ iss: 'other' })).to.include('iss');
    expect(await problem({ aud: [ISSUER, 'https://other.example'] })).to.equal('taken');
    expect(await problem({ request_uri: 'urn:x' })).to.include('must not hold request');
    expect(await problem({ resource: ['https://a.example', 'https://b.example'] })).to.include('one resource');
    expect(await problem({ jti: 7 })).to.include('jti');
  });
});
