// No answer shows a write-only field — a Client's, an IdentityProvider's (client secret, LDAP bind
// password) or a Webhook's secret, a person's password — not even the 422 of a write it refused,
// whose entity echoes the rest of what was sent. Each kind is refused twice: by its schema, and by
// a check after it (the webhook's secret's form, a taken email), so both ways a 422 is made are seen.
import { expect } from 'chai';
import { writeOnlyFields } from '../../api/schema/write-only.js';
import { Box, boxForSuite, type JsonResponse } from '../support/box.js';

const SECRET = 'whsec_c2VjcmV0LXRoYXQtbXVzdC1uZXZlci1jb21lLWJhY2stMTIzNDU2Nzg5MA==';

describe('write-only fields in a refused write', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  boxForSuite((b, r) => ([box, root] = [b, r]));

  const api = (method: string, path: string, body?: unknown): Promise<JsonResponse> => box.json(method, path, body, root);

  /** A 422 whose entity holds the rest of the body, but not `field` nor its value anywhere. */
  function refusedWithout(res: JsonResponse, field: string, shown: string): void {
    expect(res.status, res.text).to.equal(422);
    expect(res.body.entity).to.have.property(shown);
    expect(res.body.entity).not.to.have.property(field);
    expect(res.text).not.to.include(SECRET);
  }

  it('the write-only fields are the ones the schemas declare: secret and password', function () {
    expect([...writeOnlyFields()].sort()).to.deep.equal(['password', 'secret']);
  });

  it('a Client: refused by its schema, and for its own rule', async function () {
    refusedWithout(await api('PUT', '/Client/c1', { grant_types: ['teleport'], secret: SECRET }), 'secret', 'grant_types');
    const reserved = await api('PUT', '/Client/root', { grant_types: ['implicit'], secret: SECRET });
    expect(reserved.status, reserved.text).to.be.oneOf([409, 422]);
    expect(reserved.text).not.to.include(SECRET);
    refusedWithout(
      await api('POST', '/Client', { id: 'c2', grant_types: ['client_credentials'], registration: { x: 1 }, secret: SECRET }),
      'secret',
      'grant_types',
    );
  });

  it('a Webhook: refused by its schema, and for its secret or URL', async function () {
    refusedWithout(await api('PUT', '/Webhook/w1', { url: 'https://example.com/hook', events: 'all', secret: SECRET }), 'secret', 'url');
    refusedWithout(
      await api('PUT', '/Webhook/w1', { url: 'https://example.com/hook', events: ['x'], secret: `${SECRET}!` }),
      'secret',
      'url',
    );
    refusedWithout(await api('PUT', '/Webhook/w1', { url: 'ftp://example.com/hook', events: ['x'], secret: SECRET }), 'secret', 'url');
  });

  it("an IdentityProvider: an OIDC provider's client secret, an LDAP provider's bind password", async function () {
    const oidc = { type: 'oidc', oidc: { issuer: 'https://sso.example.com', clientId: 'box' }, secret: SECRET };
    refusedWithout(await api('PUT', '/IdentityProvider/corp', { ...oidc, ldap: { url: 'x' } }), 'secret', 'oidc');
    const ldap = { type: 'ldap', ldap: { url: 'ldaps://dir.example.com', bindDN: 'cn=box', userSearch: {} }, secret: SECRET };
    refusedWithout(await api('PUT', '/IdentityProvider/dir', ldap), 'secret', 'ldap');
  });

  it("a person's password: refused by the body's rules, and for a taken email", async function () {
    refusedWithout(await api('POST', '/users', { email: 'not an address', password: SECRET }), 'password', 'email');
    expect((await api('POST', '/users', { email: 'taken@example.com', password: 'a-good-password-1' })).status).to.equal(201);
    refusedWithout(await api('POST', '/users', { email: 'taken@example.com', password: SECRET }), 'password', 'email');
  });
});
