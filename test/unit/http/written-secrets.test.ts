// What a policy sees of a write's secrets: `true` where one is written, never its value, absent
// where none is; on SCIM's door however SCIM lets a directory name the password.
import { expect } from 'chai';
import { bodyAsPoliciesSee } from '../../../api/http/written-secrets.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

describe('bodyAsPoliciesSee', function () {
  it("reads a person's password, a Client's and an IdentityProvider's secret as true", function () {
    expect(bodyAsPoliciesSee('users', { active: false, password: 'hunter2-hunter2' })).to.deep.equal({ active: false, password: true });
    expect(bodyAsPoliciesSee('Client', { grant_types: ['client_credentials'], secret: 's3cret-value' })).to.deep.equal({
      grant_types: ['client_credentials'],
      secret: true,
    });
    expect(bodyAsPoliciesSee('IdentityProvider', { type: 'oidc', secret: 'upstream' })).to.deep.equal({ type: 'oidc', secret: true });
  });

  it('reads null and "" as true too, and leaves a body without a secret as it was', function () {
    expect(bodyAsPoliciesSee('users', { password: null })).to.deep.equal({ password: true });
    expect(bodyAsPoliciesSee('users', { password: '' })).to.deep.equal({ password: true });
    expect(bodyAsPoliciesSee('users', { active: true })).to.deep.equal({ active: true });
    expect(bodyAsPoliciesSee('AccessPolicy', 'not an object')).to.equal('not an object');
    expect(bodyAsPoliciesSee('users', null)).to.equal(null);
  });

  it('never holds the value anywhere', function () {
    const bodies: [string, unknown][] = [
      ['users', { password: 'VALUE-1' }],
      ['users', { Password: 'VALUE-1' }],
      ['Client', { SECRET: 'VALUE-1' }],
      ['Client', { secret: 'VALUE-1' }],
      ['scim', { schemas: [USER], userName: 'a@b.example', PassWord: 'VALUE-1' }],
      ['scim', { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'PASSWORD', value: 'VALUE-1' }] }],
      ['scim', { schemas: [PATCH_OP], operations: [{ Op: 'Replace', Path: `${USER}:password`, Value: 'VALUE-1' }] }],
      ['scim', { schemas: [PATCH_OP], Operations: [{ op: 'add', value: { active: true, Password: 'VALUE-1' } }] }],
      ['scim', { schemas: [PATCH_OP], Operations: [{ op: 'add', value: { [`${USER}:PASSWORD`]: 'VALUE-1' } }] }],
    ];
    for (const [route, body] of bodies)
      expect(JSON.stringify(bodyAsPoliciesSee(route, body)), JSON.stringify(body)).not.to.include('VALUE-1');
  });

  it('on SCIM, names the password "password" however it was spelled', function () {
    expect(bodyAsPoliciesSee('scim', { userName: 'a', Password: 'x', active: true })).to.deep.equal({
      userName: 'a',
      password: true,
      active: true,
    });
    expect(bodyAsPoliciesSee('scim', { [`${USER}:password`]: 'x' })).to.deep.equal({ password: true });
    expect(
      bodyAsPoliciesSee('scim', {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'replace', path: 'active', value: false },
          { op: 'replace', path: `${USER}:PassWord`, value: 'x' },
          { op: 'replace', value: { active: false, PASSWORD: 'x' } },
          { op: 'remove', path: 'password' },
        ],
      }),
    ).to.deep.equal({
      schemas: [PATCH_OP],
      Operations: [
        { op: 'replace', path: 'active', value: false },
        { op: 'replace', path: 'password', value: true },
        { op: 'replace', value: { active: false, password: true } },
        { op: 'remove', path: 'password' },
      ],
    });
  });

  it('leaves a password field alone outside the secrets it knows (a policy may name one in its schema)', function () {
    const policy = { engine: 'json-schema', schema: { properties: { body: { properties: { password: { const: true } } } } } };
    expect(bodyAsPoliciesSee('AccessPolicy', policy)).to.deep.equal(policy);
  });
});
