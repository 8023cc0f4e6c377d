// Every engine counts the work it does (api/policy/budget.ts, issue 81): a policy that does much
// spends much, and its decision's budget stops it, whatever shape the work takes.
import { expect } from 'chai';
import { decisionLeftNow, EVALUATION_LIMITS, metered, spentNow, withDecision } from '../../../api/policy/budget.js';
import { checkPolicyCompiles, compilePolicy, createPolicyAjv } from '../../../api/policy/engines.js';
import { chargeValidation } from '../../../api/policy/schema-work.js';
import type { PolicyObject } from '../../../api/policy/requests.js';
import type { AccessPolicy } from '../../../api/types.js';

const nested = (depth: number): unknown => (depth === 0 ? [] : [nested(depth - 1)]);
const request = (properties: Record<string, unknown>) => ({ resource: { type: 'doc', id: 'd', properties } }) as unknown as PolicyObject;
const app = (policy: Partial<AccessPolicy>): AccessPolicy =>
  ({ id: 'p', resourceType: 'AccessPolicy', app: 'wiki', ...policy }) as AccessPolicy;

/** What one evaluation of `policy` over `req` spends, and how long it takes, within a decision. */
function evaluation(policy: Partial<AccessPolicy>, req: PolicyObject): { allowed: boolean; spent: number; ms: number } {
  const rule = compilePolicy(app(policy), createPolicyAjv());
  let spent = 0;
  const started = performance.now();
  const allowed = withDecision(() => {
    const result = rule.test(req);
    spent = EVALUATION_LIMITS.perDecision - decisionLeftNow();
    return result;
  });
  return { allowed, spent, ms: performance.now() - started };
}
describe('every engine counts the work it does', function () {
  it('json-schema: a reference that recurses through two branches is stopped by its budget, not by the input', function () {
    const schema = {
      $defs: { a: { anyOf: [{ allOf: [{ items: { $ref: '#/$defs/a' } }, { not: {} }] }, { items: { $ref: '#/$defs/a' } }] } },
      properties: { resource: { properties: { properties: { properties: { x: { $ref: '#/$defs/a' } } } } } },
    };
    checkPolicyCompiles(app({ engine: 'json-schema', schema })); // taken: its work is metered, not refused
    const shallow = evaluation({ engine: 'json-schema', schema }, request({ x: nested(3) }));
    expect(shallow.allowed).to.equal(true);
    const deep = evaluation({ engine: 'json-schema', schema }, request({ x: nested(24) }));
    expect(deep.allowed).to.equal(false);
    // 2^24 applications unmetered took ajv seconds; stopped, about a decision's 30 ms.
    expect(deep.ms).to.be.below(1000);
  });

  it('json-schema: counts every keyword applied to every value, through references that expand', function () {
    const spent = (schema: object, value: unknown) => metered(() => (chargeValidation(schema, value), spentNow())).value!;
    const defs: Record<string, unknown> = { d0: { type: 'string' } };
    for (let i = 1; i <= 10; i++) defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i - 1}` }, { $ref: `#/$defs/d${i - 1}` }] };
    // Twice the levels, twice the work... of each of 2^10 leaves.
    const ten = spent({ $defs: defs, $ref: '#/$defs/d10' }, 's');
    const five = spent({ $defs: defs, $ref: '#/$defs/d5' }, 's');
    expect(ten).to.be.above(5_000);
    expect(ten / five).to.be.above(25);
    // uniqueItems compares every pair: quadratic in the items, unless they are declared scalars.
    const list = Array.from({ length: 400 }, (_, i) => `s${i}`);
    expect(spent({ uniqueItems: true }, list)).to.be.above(400 * 399);
    expect(spent({ uniqueItems: true, items: { type: 'string' } }, list)).to.be.below(4 * 400);
    // A reference that leads back to itself without reaching into the value is stopped, never a stack overflow.
    const loop = metered(() => chargeValidation({ $defs: { a: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' }, 1));
    expect(loop.stopped).to.equal('policy');
  });

  it('json-schema: refuses, when written, a reference the count cannot follow', function () {
    for (const [schema, says] of [
      [{ $ref: 'https://example.com/other.json' }, /not a JSON pointer to a part of this schema/],
      [{ properties: { a: { $id: 'https://example.com/a', $ref: '#' } } }, /an \$id below the top/],
      [{ $ref: '#/$defs/missing' }, /not a JSON pointer/],
    ] as const)
      expect(() => checkPolicyCompiles(app({ engine: 'json-schema', schema })))
        .to.throw()
        .that.satisfies((err: { errors: unknown }) => says.test(JSON.stringify(err.errors)));
    // A property named "$ref" is a name, not a reference.
    checkPolicyCompiles(app({ engine: 'json-schema', schema: { properties: { $ref: { type: 'string' } } } }));
  });

  it('matcho: every alternative tried against every item is counted', function () {
    const list = Array.from({ length: 1800 }, (_, i) => `s${i}`);
    const oneOf = (n: number) => ({
      resource: { properties: { list: { '$one-of': Array.from({ length: n }, (_, i) => ({ $contains: `z${i}` })) } } },
    });
    const small = evaluation({ engine: 'matcho', matcho: oneOf(10) }, request({ list }));
    expect(small.allowed).to.equal(false);
    expect(small.spent).to.be.above(18_000);
    const large = evaluation({ engine: 'matcho', matcho: oneOf(990) }, request({ list }));
    expect(large.allowed).to.equal(false);
    expect(large.spent).to.be.within(EVALUATION_LIMITS.perDecision, EVALUATION_LIMITS.perDecision + 2); // stopped at the decision's budget
    expect(large.ms).to.be.below(1000);
  });

  it('cel: an expression without a loop pays for what it reads, and converting the request is the decision’s', function () {
    const list = Array.from({ length: 1800 }, (_, i) => `s${i}`);
    const within = evaluation({ engine: 'cel', cel: '"z" in request.resource.properties.list' }, request({ list }));
    expect(within.allowed).to.equal(false);
    // 1,800 values converted, and the list read once by `in`.
    expect(within.spent).to.be.within(1_800 + 180, 1_800 + 400);
    const trivial = evaluation({ engine: 'cel', cel: 'request.resource.type == "z"' }, request({ list }));
    expect(trivial.spent).to.be.above(1_800);
  });
});
