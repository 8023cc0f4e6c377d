// Policy regexes run on RE2: a pattern with nested quantifiers cannot stall the event loop,
// and a pattern RE2 cannot run is refused when the policy is written.
import { expect } from 'chai';
import { ValidationError } from '../../../api/errors.js';
import { checkPolicyCompiles, compilePolicy, createPolicyAjv } from '../../../api/policy/engines.js';
import type { BoxApiRequest } from '../../../api/policy/requests.js';
import { matcho, patternErrors } from '../../../api/policy/matcho.js';
import type { AccessPolicy } from '../../../api/types.js';

// A backtracking engine needs about 2^n steps for n characters of these inputs: one of them
// would block this test for longer than the universe has existed.
const EVIL = '^(a+)+$';
const ALMOST = `${'a'.repeat(5000)}!`;

function request(params: Record<string, unknown>): BoxApiRequest {
  return { 'request-method': 'get', uri: '/Client', params, 'query-string': '', client: null, user: null, scope: null };
}

function refusal(policy: Record<string, unknown>): Record<string, string[]> {
  try {
    checkPolicyCompiles(policy as unknown as AccessPolicy);
  } catch (err) {
    expect(err).to.be.instanceOf(ValidationError);
    return (err as ValidationError).errors;
  }
  throw new Error('the policy was accepted');
}

describe('policy regexes (RE2)', function () {
  this.timeout(5000);

  it('matcho: nested quantifiers against a long near-match answer, and correctly', function () {
    expect(matcho({ uri: ALMOST }, { uri: `#${EVIL}` })).to.equal(false);
    expect(matcho({ uri: 'a'.repeat(5000) }, { uri: `#${EVIL}` })).to.equal(true);
    expect(matcho({ uri: `/${ALMOST}` }, { uri: '#^(/?a+)+$' })).to.equal(false);
  });

  it('matcho: "#regex" still means "contains a match", unanchored unless the pattern anchors', function () {
    expect(matcho({ uri: '/Client/abc' }, { uri: '#Client' })).to.equal(true);
    expect(matcho({ uri: '/Client/abc' }, { uri: '#^Client' })).to.equal(false);
    expect(matcho({ uri: '/Client/abc' }, { uri: '#[a-c]{3}$' })).to.equal(true);
  });

  it('patternErrors reports what RE2 cannot run: lookaround, backreferences', function () {
    for (const unsupported of ['(?<=/)Client', '^(?!/Session)', '(a)\\1']) {
      const errors = patternErrors({ uri: `#${unsupported}` }, 'dyn');
      expect(errors, unsupported).to.have.length(1);
      expect(errors[0]).to.match(/^matcho\.uri .*RE2/);
    }
    expect(patternErrors({ uri: '#^/(Client|AccessPolicy)(/.*)?$' }, 'dyn')).to.deep.equal([]);
  });

  it('json-schema: an evil `pattern` or `patternProperties` answers, and correctly', function () {
    const validate = createPolicyAjv().compile({
      type: 'object',
      properties: { q: { type: 'string', pattern: EVIL } },
      patternProperties: { '^(b+)+$': false },
    });
    expect(validate({ q: ALMOST })).to.equal(false);
    expect(validate({ q: 'a'.repeat(5000) })).to.equal(true);
    expect(validate({ [`${'b'.repeat(5000)}!`]: 1 })).to.equal(true);
    expect(validate({ [`${'b'.repeat(5000)}`]: 1 })).to.equal(false);
  });

  it('a policy with a pattern RE2 cannot run is refused (422) naming the field', function () {
    expect(refusal({ id: 'p', engine: 'matcho', matcho: { uri: '#(?<=/)Client' } })).to.have.key('matcho');
    const schema = refusal({
      id: 'p',
      engine: 'json-schema',
      schema: { properties: { uri: { type: 'string', pattern: '(?<=/)Client' } } },
    });
    expect(schema).to.have.key('schema');
    expect(schema.schema![0]).to.match(/RE2/);
    expect(refusal({ id: 'p', engine: 'json-schema', schema: { patternProperties: { '(a)\\1': { type: 'string' } } } })).to.have.key(
      'schema',
    );
  });

  it('a stored policy whose pattern RE2 cannot run does not compile (it allows nothing)', function () {
    const ajv = createPolicyAjv();
    const matchoPolicy = { id: 'm', engine: 'matcho', matcho: { uri: '#^(?!/Session)' } } as unknown as AccessPolicy;
    expect(() => compilePolicy(matchoPolicy, ajv)).to.throw(/RE2/);
    const schemaPolicy = {
      id: 's',
      engine: 'json-schema',
      schema: { properties: { uri: { pattern: '^(?!/Session)' } } },
    } as unknown as AccessPolicy;
    expect(() => compilePolicy(schemaPolicy, ajv)).to.throw();
    const fine = { id: 'f', engine: 'matcho', matcho: { params: { q: `#${EVIL}` } } } as unknown as AccessPolicy;
    expect(compilePolicy(fine, ajv).test(request({ q: ALMOST }))).to.equal(false);
  });
});
