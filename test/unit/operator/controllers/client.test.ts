// Which Secret a Client's secret comes from (operator/controllers/client.ts secretSource), by what
// it declares: a client_secret_basic or client_secret_post client gets a generated one as a client
// that declares nothing does, even with keys; a none client never has one.
import { expect } from 'chai';
import { type ClientResource, generatedSecretName, secretSource } from '../../../../operator/controllers/client.js';
import type { ClientSpec } from '../../../../api/public.js';

const resource = (spec: Partial<ClientSpec>): ClientResource => ({
  metadata: { name: 'web', namespace: 'team-a' },
  spec: { grant_types: ['authorization_code'], ...spec },
});
const generated = { name: generatedSecretName('web'), key: 'client-secret', generated: true };
const jwks = { keys: [{ kty: 'EC', crv: 'P-256', x: 'x', y: 'y' }] };

describe('the secret of a Client resource (secretSource)', function () {
  it('declaring nothing, client_secret_basic or client_secret_post: generated', function () {
    expect(secretSource(resource({}))).to.deep.equal(generated);
    expect(secretSource(resource({ token_endpoint_auth_method: 'client_secret_basic' }))).to.deep.equal(generated);
    expect(secretSource(resource({ token_endpoint_auth_method: 'client_secret_post' }))).to.deep.equal(generated);
  });

  it('a secret method with keys (for its request objects) still gets its secret; keys alone need none', function () {
    expect(secretSource(resource({ token_endpoint_auth_method: 'client_secret_basic', jwks }))).to.deep.equal(generated);
    expect(secretSource(resource({ jwks }))).to.equal(undefined);
    expect(secretSource(resource({ token_endpoint_auth_method: 'private_key_jwt', jwks }))).to.equal(undefined);
  });

  it('none: no secret, even with keys or a secretRef the CRD would refuse', function () {
    expect(secretSource(resource({ token_endpoint_auth_method: 'none' }))).to.equal(undefined);
    expect(secretSource(resource({ token_endpoint_auth_method: 'none', jwks }))).to.equal(undefined);
    expect(secretSource(resource({ token_endpoint_auth_method: 'none', secretRef: { name: 's' } }))).to.equal(undefined);
  });

  it('secretRef: read from it, for a secret method too', function () {
    expect(secretSource(resource({ token_endpoint_auth_method: 'client_secret_post', secretRef: { name: 's' } }))).to.deep.equal({
      name: 's',
      key: 'client-secret',
      generated: false,
    });
  });
});
