// Real OAuth client libraries against the server as `make run` starts it
// (embedded PostgreSQL, no DATABASE_URL): openid-client obtains tokens, jose
// verifies the JWT through the published JWKS.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as oauth from 'openid-client';
import { Box } from '../support/box.js';

describe('standard OAuth clients against `make run`', function () {
  this.timeout(120_000);
  let box: Box;
  let rootSecret: string;

  before(async function () {
    // Exactly what `make run` does: no DATABASE_URL, no root secret: both generated into the data dir.
    box = await Box.start({ databaseUrl: 'embedded', env: { BOXAUTH_ROOT_CLIENT_SECRET: '' } });
    const file = JSON.parse(fs.readFileSync(path.join(box.dataDir, 'root-client.json'), 'utf8'));
    rootSecret = file.client_secret;
    expect(file.client_id).to.equal('root');
    expect(fs.statSync(path.join(box.dataDir, 'root-client.json')).mode & 0o777).to.equal(0o600);
    // Register an application client through the API, as the README's walkthrough does.
    const root = await discover('root', oauth.ClientSecretBasic(rootSecret));
    const { access_token } = await oauth.clientCredentialsGrant(root);
    const put = await box.json(
      'PUT',
      '/Client/orders',
      {
        grant_types: ['client_credentials'],
        secret: 'orders-secret-1',
        auth: { client_credentials: { token_format: 'jwt', access_token_expiration: 120, refresh_token: true } },
      },
      access_token,
    );
    expect(put.status).to.equal(201);
    await box.json('PUT', '/AccessPolicy/orders', { engine: 'allow', link: [{ id: 'orders', resourceType: 'Client' }] }, access_token);
  });
  after(async function () {
    await box?.stop();
  });

  function discover(clientId: string, auth: oauth.ClientAuth): Promise<oauth.Configuration> {
    return oauth.discovery(new URL(box.url), clientId, undefined, auth, { algorithm: 'oauth2', execute: [oauth.allowInsecureRequests] });
  }

  for (const [method, auth] of [
    ['client_secret_basic', oauth.ClientSecretBasic('orders-secret-1')],
    ['client_secret_post', oauth.ClientSecretPost('orders-secret-1')],
  ] as const) {
    it(`client credentials with ${method}; jose verifies iss, sub, aud and exp through the JWKS`, async function () {
      const config = await discover('orders', auth);
      const tokens = await oauth.clientCredentialsGrant(config, { audience: 'https://orders.internal' });
      expect(tokens.token_type).to.equal('bearer');
      expect(tokens.expires_in).to.equal(120);
      const jwks = createRemoteJWKSet(new URL(`${box.url}/.well-known/jwks.json`));
      const { payload } = await jwtVerify(tokens.access_token, jwks, { issuer: box.url, audience: 'https://orders.internal' });
      expect(payload.sub).to.equal('orders');
      expect(payload.exp! - payload.iat!).to.equal(120);
      // A token for https://orders.internal is not one for the box's own API (RFC 9068 §4); one for the box is.
      expect((await box.json('GET', '/Client/orders', undefined, tokens.access_token)).status).to.equal(401);
      const forTheBox = await oauth.clientCredentialsGrant(config, { audience: box.url });
      expect((await box.json('GET', '/Client/orders', undefined, forTheBox.access_token)).status).to.equal(200);
    });
  }

  it('refresh through the library, then introspection and revocation', async function () {
    const config = await discover('orders', oauth.ClientSecretBasic('orders-secret-1'));
    const first = await oauth.clientCredentialsGrant(config);
    expect(first.refresh_token).to.be.a('string');
    const refreshed = await oauth.refreshTokenGrant(config, first.refresh_token!);
    expect(refreshed.access_token).to.be.a('string').and.not.equal(first.access_token);
    const info = await oauth.tokenIntrospection(config, refreshed.access_token);
    expect(info.active).to.equal(true);
    expect(info.client_id).to.equal('orders');
    await oauth.tokenRevocation(config, refreshed.access_token);
    expect((await oauth.tokenIntrospection(config, refreshed.access_token)).active).to.equal(false);
  });

  it('a wrong secret is a protocol error the library understands', async function () {
    const config = await discover('orders', oauth.ClientSecretBasic('wrong-secret'));
    try {
      await oauth.clientCredentialsGrant(config);
      expect.fail('should have been refused');
    } catch (err) {
      // RFC 6749 §5.2: 401 with a Basic challenge, which the library reports as such.
      const e = err as { status?: number; cause?: { scheme: string }[] };
      expect(e.status).to.equal(401);
      expect(e.cause?.[0]?.scheme).to.equal('basic');
    }
  });
});
