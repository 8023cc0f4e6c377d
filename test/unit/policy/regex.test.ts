// Policy regexes run on RE2: a pattern with nested quantifiers cannot stall the event loop,
// and a pattern RE2 cannot run is refused when the policy is written.
import { expect } from 'chai';
import { ValidationError } from '../../../api/errors.js';
import { checkPolicyCompiles, compilePolicy, createPolicyAjv } from '../../../api/policy/engines.js';
import type { BoxApiRequest } from '../../../api/policy/requests.js';
import { matcho, patternErrors } from '../../../api/policy/matcho.js';
import { policyRegex, programBound } from '../../../api/policy/regex.js';
import { EVALUATION_LIMITS } from '../../../api/policy/budget.js';
import { PolicyIndex } from '../../../api/policy/evaluate.js';
import type { AppRequest } from '../../../api/policy/requests.js';
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

// Issue 63: linear is not cheap. 17 characters, 2,999 instructions: a second of re2js over a 4,000-character path.
const STALL = '(?:a?){999}a{999}';
// The largest of its kind under the limit: 902 instructions.
const HEAVY = '(?:a?){300}a{300}';

describe('the size of a pattern and the cost of a match (issue 63)', function () {
  this.timeout(10_000);

  it('refuses a pattern whose program is over the limit, naming the limit, wherever a pattern is written', function () {
    const limit = /instructions of RE2's program, over the limit of 1,000/;
    expect(refusal({ id: 'p', engine: 'matcho', app: 'wiki', matcho: { path: `#${STALL}` } }).matcho![0]).to.match(limit);
    expect(
      refusal({ id: 'p', engine: 'json-schema', schema: { properties: { uri: { type: 'string', pattern: STALL } } } }).schema![0],
    ).to.match(limit);
    expect(refusal({ id: 'p', engine: 'json-schema', schema: { patternProperties: { [STALL]: { type: 'string' } } } }).schema![0]).to.match(
      limit,
    );
    const cel = refusal({ id: 'p', engine: 'cel', app: 'wiki', cel: `request.path.matches("${STALL}")` }).cel!;
    expect(cel.join()).to.match(limit);
    // Just under it, and what policies write, are taken.
    expect(policyRegex(HEAVY).size).to.equal(902);
    expect(() =>
      checkPolicyCompiles({ id: 'p', engine: 'matcho', matcho: { uri: `#${HEAVY}` } } as unknown as AccessPolicy),
    ).not.to.throw();
    expect(policyRegex('^[^@\\s]{1,64}@[^@\\s]{1,255}$').size).to.be.below(EVALUATION_LIMITS.program);
  });

  it('refuses a pattern far over the limit without compiling it (compiling is what takes seconds)', function () {
    // 300 × a{1000}: 300,002 instructions, some 6 s of re2js to compile.
    expect(() => policyRegex('a{1000}'.repeat(300))).to.throw(/would compile to some [0-9,]+ instructions/);
    // The bound read from the text is never far under the program's size.
    for (const p of [
      '^[a-z_][a-z0-9_]{0,62}$',
      '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?',
      '^/apps/(a|bc|d)+/x{3,9}$',
      '\\Q{9}\\E',
      '(?i)ab[[:alpha:]]{20}|y*',
    ])
      expect(programBound(p), p).to.be.at.least(policyRegex(p).size - 2);
  });

  /** An App's policies, and a gateway's request for `path`. */
  const decide = (policies: Record<string, unknown>[], path: string) => {
    const index = new PolicyIndex(
      policies.map((p, i) => ({ id: `p${i}`, app: 'wiki', ...p }) as unknown as AccessPolicy),
      (id, err) => {
        throw new Error(`${id}: ${err.message}`);
      },
    );
    const request = { app: 'wiki', 'request-method': 'get', host: 'wiki', path, query: {}, headers: {} } as unknown as AppRequest;
    const subject = { clientId: null, user: null, signedInAtLeast: () => false, carries: () => false };
    return index.decideApp({ id: 'wiki' }, subject, { request, person: null });
  };

  it('charges a match its bound before running it: one over what the decision has left is stopped, and denies, with the reason', function () {
    const long = 'a'.repeat(4000);
    for (const policy of [
      { engine: 'matcho', matcho: { path: `#${HEAVY}` } },
      { engine: 'json-schema', schema: { properties: { path: { type: 'string', pattern: HEAVY } } } },
      { engine: 'cel', cel: `request.path.matches("${HEAVY}")` },
    ]) {
      // Allowed on a path the budget can pay for…
      expect(decide([policy], `/${'a'.repeat(320)}`).allowed, policy.engine).to.equal(true);
      // …denied, by its budget, on one it cannot: 902 × 4,001 / 3 units, over a decision's 100,000.
      const verdict = decide([policy], `/${long}`);
      expect(verdict.allowed, policy.engine).to.equal(false);
      expect(verdict.outcomes[0]!.stopped, policy.engine).to.match(
        /^the evaluation was stopped: the decision exceeded its budget of 100,000/,
      );
    }
  });

  it("one decision's budget is shared by its policies: three matches each within it are not three times it", function () {
    // Each about 902 × 301 / 3 = 90,000 units: the first runs, the second would pass the decision's 100,000.
    const policy = { engine: 'matcho', matcho: { path: `#${HEAVY}` } };
    const verdict = decide([policy, policy, policy], `/${'a'.repeat(300)}`);
    expect(verdict.outcomes.map((o) => [o.verdict, o.stopped === undefined])).to.deep.equal([
      ['allows', true],
      ['does not allow', false],
      ['does not allow', false],
    ]);
    // The next decision has a budget of its own.
    expect(decide([policy], `/${'a'.repeat(300)}`).allowed).to.equal(true);
  });

  it("a request's pattern (CEL) over the limit is an error, which denies", function () {
    const verdict = decide([{ engine: 'cel', cel: 'request.path.matches(request.query.p)' }], '/aaa');
    expect(verdict.allowed).to.equal(false);
    const index = new PolicyIndex(
      [{ id: 'q', app: 'wiki', engine: 'cel', cel: 'request.path.matches(string(request.query.p))' } as unknown as AccessPolicy],
      () => {},
    );
    const request = {
      app: 'wiki',
      'request-method': 'get',
      host: 'wiki',
      path: '/aaa',
      query: { p: STALL },
      headers: {},
    } as unknown as AppRequest;
    expect(index.why('q', request)).to.match(/instructions of RE2's program, over the limit of 1,000/);
  });

  it('prices a literal pattern by its program in the estimate: three over a long field are refused when written', function () {
    const three = `request.body.a.matches("${HEAVY}") || request.body.b.matches("${HEAVY}") || request.body.c.matches("${HEAVY}")`;
    expect(refusal({ id: 'p', engine: 'cel', cel: three }).cel!.join()).to.match(
      /its estimated cost, [\d,]+, is over the limit of 10,000,000/,
    );
  });
});
