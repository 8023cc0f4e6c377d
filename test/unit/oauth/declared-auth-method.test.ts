// Which ways in a Client's token_endpoint_auth_method leaves it (RFC 7591 §2), and what FAPI 2.0
// leaves a fapi2 client: the pure decisions of api/oauth/client-auth.ts and api/oauth/fapi2.ts,
// and what a declared method says of the client's secret (api/client-keys.ts).
import { expect } from 'chai';
import { type ClientAuthMethod, declaredMethodRefusal } from '../../../api/oauth/client-auth.js';
import { fapi2AuthMethodRefusal } from '../../../api/oauth/fapi2.js';
import { hasOwnCredential } from '../../../api/client-keys.js';
import type { Client } from '../../../api/types.js';

const WAYS: ClientAuthMethod[] = [
  'client_secret_basic',
  'client_secret_post',
  'none',
  'private_key_jwt',
  'tls_client_auth',
  'self_signed_tls_client_auth',
  'workload',
  'federated',
  'spiffe_jwt',
];
const client = (extra: Partial<Client>): Client => ({ id: 'c', grant_types: ['authorization_code'], ...extra }) as Client;
/** The ways `c` may authenticate, of WAYS. */
const allowed = (c: Client, refusal: (c: Client, m: ClientAuthMethod) => string | undefined): ClientAuthMethod[] =>
  WAYS.filter((m) => refusal(c, m) === undefined);

describe('a declared token_endpoint_auth_method', function () {
  it('client_secret_basic, client_secret_post, none and private_key_jwt each allow themselves only', function () {
    for (const method of ['client_secret_basic', 'client_secret_post', 'none', 'private_key_jwt'] as const) {
      expect(allowed(client({ token_endpoint_auth_method: method }), declaredMethodRefusal), method).to.deep.equal([method]);
    }
  });

  it('unset allows every way (as before), and a mutual TLS method is one more way in, not the only one', function () {
    expect(allowed(client({}), declaredMethodRefusal)).to.deep.equal(WAYS);
    expect(allowed(client({ token_endpoint_auth_method: 'tls_client_auth' }), declaredMethodRefusal)).to.deep.equal(WAYS);
  });

  it('the refusal says what to send instead', function () {
    const basic = declaredMethodRefusal(client({ token_endpoint_auth_method: 'client_secret_basic' }), 'client_secret_post');
    expect(basic).to.include('client_secret_basic only').and.include('HTTP Basic');
    const post = declaredMethodRefusal(client({ token_endpoint_auth_method: 'client_secret_post' }), 'client_secret_basic');
    expect(post).to.include('client_secret_post only').and.include('in the body');
    expect(declaredMethodRefusal(client({ token_endpoint_auth_method: 'none' }), 'private_key_jwt')).to.include('public client');
  });
});

describe('FAPI 2.0 client authentication (profile: fapi2)', function () {
  it('allows private_key_jwt and mutual TLS only, and names the way refused', function () {
    const fapi = client({ profile: 'fapi2', token_endpoint_auth_method: 'private_key_jwt' });
    expect(allowed(fapi, fapi2AuthMethodRefusal)).to.deep.equal(['private_key_jwt', 'tls_client_auth', 'self_signed_tls_client_auth']);
    expect(fapi2AuthMethodRefusal(fapi, 'client_secret_basic')).to.include('never client_secret_basic');
    expect(fapi2AuthMethodRefusal(fapi, 'client_secret_post')).to.include('never client_secret_post');
    expect(fapi2AuthMethodRefusal(fapi, 'none')).to.include('never client_id alone (none)');
  });

  it('holds no other client', function () {
    expect(allowed(client({}), fapi2AuthMethodRefusal)).to.deep.equal(WAYS);
  });
});

describe('what a declared method says of the secret (hasOwnCredential)', function () {
  const jwks = { keys: [{ kty: 'EC' }] };
  it('keys or a certificate method need no secret; a secret method or none hold no other credential, keys or not', function () {
    expect(hasOwnCredential({ jwks })).to.equal(true);
    expect(hasOwnCredential({ token_endpoint_auth_method: 'tls_client_auth' })).to.equal(true);
    expect(hasOwnCredential({ token_endpoint_auth_method: 'private_key_jwt', jwks })).to.equal(true);
    expect(hasOwnCredential({})).to.equal(false);
    for (const method of ['client_secret_basic', 'client_secret_post', 'none']) {
      expect(hasOwnCredential({ token_endpoint_auth_method: method, jwks }), method).to.equal(false);
    }
  });
});
