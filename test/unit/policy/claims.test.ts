// Claims an admin shapes (api/policy/claims.ts): the names no expression may set, the values a
// token can carry, what is left out, and that each expression is compiled once per record.
import { expect } from 'chai';
import { ValidationError } from '../../../api/errors.js';
import { checkClaimsCompile, claimNameProblem, RESERVED_CLAIMS, shapeClaims, type ClaimBindings } from '../../../api/policy/claims.js';

const ada: ClaimBindings = {
  user: {
    id: '7',
    email: 'ada@example.com',
    email_verified: true,
    groups: ['wiki-editors', 'wiki-admins', 'payroll'],
    data: { tenant: 'acme' },
    scim: {},
    identities: [{ provider: 'github', subject: '42' }],
  },
  grant: { client: 'wiki', scope: ['openid', 'wiki'], aud: [], amr: ['pwd', 'otp', 'mfa'], acr: 'urn:boxauth:acr:mfa' },
};

const refusalOf = (claims: Record<string, string>): Record<string, string[]> => {
  try {
    checkClaimsCompile({ claims });
  } catch (err) {
    expect(err).to.be.instanceOf(ValidationError);
    return (err as ValidationError).errors;
  }
  return {};
};

describe('claims an admin shapes', function () {
  it('the roles example: groups named wiki-… become roles', function () {
    const claims = { roles: 'user.groups.filter(g, g.startsWith("wiki-")).map(g, g.substring(5))' };
    expect(refusalOf(claims)).to.deep.equal({});
    expect(shapeClaims(claims, ada)).to.deep.equal({ claims: { roles: ['editors', 'admins'] }, leftOut: [] });
  });

  it('refuses every reserved name, in any case, and names that are no claim names', function () {
    for (const name of [...RESERVED_CLAIMS, 'SUB', 'Email_Verified']) expect(claimNameProblem(name), name).to.include('alone states');
    for (const name of ['__proto__', 'constructor', 'a b', '', 'x'.repeat(257), 'é'])
      expect(claimNameProblem(name), name).to.be.a('string');
    for (const name of ['roles', 'tenant', 'https://wiki.example/roles', 'urn:example:level'])
      expect(claimNameProblem(name)).to.equal(undefined);
    for (const name of ['sub', 'iss', 'aud', 'exp', 'acr', 'amr', 'cnf']) expect(RESERVED_CLAIMS).to.include(name);
  });

  it('a write-time refusal names the claim and each problem', function () {
    const errors = refusalOf({ sub: 'user.email', ok: 'user.email', bad: 'user.salary', worse: 'user.groups.filter(' });
    expect(errors).to.have.keys('claims.sub', 'claims.bad', 'claims.worse');
    expect(errors['claims.bad']!.join()).to.include('salary');
  });

  it('values as JSON carries them; null, "" and [] leave the claim out; what JSON cannot carry is left out and said', function () {
    const claims = {
      n: '3',
      u: '3u',
      d: '2.5',
      m: '{"a": [1, true, "x"]}',
      none: 'null',
      empty: '""',
      nothing: '[]',
      huge: '9223372036854775807',
      bytes: 'b"x"',
      gated: '"admin" in grant.scope ? "yes" : null',
    };
    const { claims: shaped, leftOut } = shapeClaims(claims, ada);
    expect(shaped).to.deep.equal({ n: 3, u: 3, d: 2.5, m: { a: [1, true, 'x'] } });
    expect(leftOut.map((l) => l.claim)).to.have.members(['huge', 'bytes']);
  });

  it('a run-time error leaves only its claim out', function () {
    const { claims, leftOut } = shapeClaims({ nickname: 'user.data.nickname', tenant: 'user.data.tenant' }, ada);
    expect(claims).to.deep.equal({ tenant: 'acme' });
    expect(leftOut).to.have.length(1);
    expect(leftOut[0]).to.include({ claim: 'nickname' });
  });

  it('a stored expression that no longer compiles is left out, never thrown', function () {
    const { claims, leftOut } = shapeClaims({ sub: '"someone-else"', old: 'user.nosuchfield', ok: 'grant.acr' }, ada);
    expect(claims).to.deep.equal({ ok: 'urn:boxauth:acr:mfa' });
    expect(leftOut.map((l) => l.claim)).to.have.members(['sub', 'old']);
  });

  it('the expression sees this person only: user and grant are its variables', function () {
    expect(refusalOf({ peek: 'users.size()' })['claims.peek']!.join()).to.include('no such variable');
    expect(shapeClaims({ me: 'user' }, ada).claims.me).to.deep.equal(ada.user);
  });
});
