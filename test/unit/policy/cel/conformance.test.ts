// CEL's own conformance tests (cel-spec v0.25.1, as @bufbuild/cel-spec ships them), run through the
// box's wrapper: compileCel's checker, its cost meter and the strings extension. The evaluator is
// @bufbuild/cel's, which runs the whole suite upstream; what this shows is that the wrapper does
// not change what an expression means: every case of the sections a policy or a claim uses
// compiles (or, where the suite expects an error, is refused or ends in one) and yields the value
// the specification says.
import { expect } from 'chai';
import { celUint, isCelList, isCelMap, isCelType, isCelUint } from '@bufbuild/cel';
import type { Type } from '@bufbuild/cel-spec/cel/expr/checked_pb.js';
import { Type_PrimitiveType } from '@bufbuild/cel-spec/cel/expr/checked_pb.js';
import type { Value } from '@bufbuild/cel-spec/cel/expr/value_pb.js';
import { getConformanceSuite, type IncrementalTest, type IncrementalTestSuite } from '@bufbuild/cel-spec/testdata/tests.js';
import { CelCompileError, compileCel, type CelShape } from '../../../../api/policy/cel/index.js';

/**
 * The sections run, by file, and why: what a policy over a request object (JSON: strings, numbers,
 * bools, null, lists, maps) or a claim over a person says. Left out: protobuf messages, enums and
 * wrappers (proto2, proto3, enums, wrappers, dynamic, eq_wrapper), timestamps and durations (the
 * request object holds none), the extensions the box does not offer (math, encoders, bindings,
 * block, optionals) and the type checker's own deductions (type_deductions: the box's checker
 * answers only whether an expression can run over the shape, not CEL's full type).
 */
const SECTIONS: Record<string, { sections: string[]; why: string }> = {
  basic: {
    sections: ['self_eval_zeroish', 'self_eval_nonzeroish', 'variables', 'functions', 'reserved_const'],
    why: 'literals and variables',
  },
  logic: { sections: ['conditional', 'AND', 'OR', 'NOT'], why: 'every policy is a condition' },
  comparisons: {
    sections: [
      'eq_literal',
      'ne_literal',
      'lt_literal',
      'gt_literal',
      'lte_literal',
      'gte_literal',
      'in_list_literal',
      'in_map_literal',
      'bound',
    ],
    why: 'comparing request fields with constants and with each other',
  },
  conversions: {
    sections: ['double', 'int', 'string', 'bool', 'dyn', 'identity', 'type'],
    why: 'string(), int(), type() in conditions and claims',
  },
  // Not quoted_map_fields (`m.\`content-type\``): cel-spec 0.25's backquoted field names, which
  // @bufbuild/cel 0.6.1's parser does not read yet; `m["content-type"]` says the same.
  fields: { sections: ['map_fields', 'map_has', 'in'], why: 'the request object is maps: selection, has(), indexing' },
  fp_math: { sections: ['fp_math'], why: 'JSON numbers are doubles' },
  integer_math: { sections: ['int64_math', 'uint64_math'], why: 'int literals and size()' },
  lists: { sections: ['concatenation', 'index', 'in', 'size'], why: 'groups, identities, amr, aud' },
  macros: {
    sections: ['exists', 'all', 'exists_one', 'map', 'filter', 'nested'],
    why: 'rules over groups and lists; claims built with filter and map',
  },
  string: { sections: ['size', 'starts_with', 'ends_with', 'matches', 'concatenation', 'contains'], why: 'paths, hosts, emails' },
  string_ext: {
    sections: [
      'char_at',
      'index_of',
      'last_index_of',
      'ascii_casing',
      'replace',
      'split',
      'substring',
      'trim',
      'join',
      'format',
      'format_errors',
      'value_errors',
      'type_errors',
    ],
    why: 'the strings extension the box turns on (roles from group names)',
  },
  parse: {
    sections: ['nest', 'repeat', 'string_literals', 'whitespace', 'comments', 'selectors', 'receiver_function_names'],
    why: 'what an admin may write',
  },
};

/** A declared type as a shape compileCel takes, or why the case cannot be given to the box's checker. */
function shapeOf(t: Type | undefined): { shape: CelShape } | { not: string } {
  const k = t?.typeKind;
  if (k?.case === 'dyn') return { shape: 'dyn' };
  if (k?.case === 'primitive') {
    const scalars: Partial<Record<Type_PrimitiveType, CelShape>> = {
      [Type_PrimitiveType.BOOL]: 'bool',
      [Type_PrimitiveType.INT64]: 'int',
      [Type_PrimitiveType.DOUBLE]: 'double',
      [Type_PrimitiveType.STRING]: 'string',
    };
    const shape = scalars[k.value];
    return shape ? { shape } : { not: Type_PrimitiveType[k.value] };
  }
  if (k?.case === 'listType') {
    const of = shapeOf(k.value.elemType);
    return 'shape' in of ? { shape: { list: of.shape } } : of;
  }
  if (k?.case === 'mapType') {
    const key = k.value.keyType?.typeKind;
    if (!(key?.case === 'primitive' && key.value === Type_PrimitiveType.STRING)) return { not: 'a map whose keys are not strings' };
    const of = shapeOf(k.value.valueType);
    return 'shape' in of ? { shape: { map: of.shape } } : of;
  }
  return { not: String(k?.case) };
}

/** A conformance value as the box's bindings hold one, or undefined when it is not JSON-like. */
function fromValue(v: Value | undefined): { value: unknown } | undefined {
  const k = v?.kind;
  switch (k?.case) {
    case 'nullValue':
      return { value: null };
    case 'boolValue':
    case 'int64Value':
    case 'doubleValue':
    case 'stringValue':
    case 'bytesValue':
      return { value: k.value };
    case 'uint64Value':
      return { value: celUint(k.value) };
    case 'typeValue':
      return { value: new TypeName(k.value) };
    case 'listValue': {
      const items = k.value.values.map(fromValue);
      return items.every((i) => i) ? { value: items.map((i) => i!.value) } : undefined;
    }
    case 'mapValue': {
      const entries = k.value.entries.map((e) => [fromValue(e.key), fromValue(e.value)] as const);
      return entries.every(([a, b]) => a && b) ? { value: new Map(entries.map(([a, b]) => [a!.value, b!.value])) } : undefined;
    }
    default:
      return undefined;
  }
}

/** A value of type `type`, as the suite names it (`list`, `map`, `int`…). */
class TypeName {
  constructor(readonly name: string) {}
}

/** Equal as CEL values of the same type: an int is not a uint nor a double here (the suite's values are typed). */
function same(actual: unknown, expected: unknown): boolean {
  if (typeof expected === 'number') return typeof actual === 'number' && (actual === expected || (isNaN(actual) && isNaN(expected)));
  if (expected instanceof TypeName) return isCelType(actual) && actual.name === expected.name;
  if (isCelUint(expected)) return isCelUint(actual) && actual.value === expected.value;
  if (expected instanceof Uint8Array) return actual instanceof Uint8Array && Buffer.from(actual).equals(Buffer.from(expected));
  if (Array.isArray(expected)) {
    if (!isCelList(actual) || actual.size !== expected.length) return false;
    const items = [...actual];
    return expected.every((e, i) => same(items[i], e));
  }
  if (expected instanceof Map) {
    if (!isCelMap(actual) || actual.size !== expected.size) return false;
    const entries = [...actual];
    return [...expected].every(([k, v]) => entries.some(([ak, av]) => same(ak, k) && same(av, v)));
  }
  return actual === expected;
}

type Verdict = { run: true } | { run: false; skipped: string };

/** Runs one case; returns why it was skipped when the box's wrapper cannot be given it. */
function runCase(test: IncrementalTest): Verdict {
  const t = test.original;
  if (t.container) return { run: false, skipped: 'a container (protobuf namespaces)' };
  const fields: Record<string, CelShape> = {};
  for (const decl of t.typeEnv) {
    if (decl.declKind.case !== 'ident') return { run: false, skipped: 'declares a function' };
    const declared = shapeOf(decl.declKind.value.type);
    if (!('shape' in declared)) return { run: false, skipped: `declares a variable as ${declared.not}` };
    fields[decl.name] = declared.shape;
  }
  const bindings: Record<string, unknown> = {};
  for (const [name, bound] of Object.entries(t.bindings)) {
    const value = bound.kind.case === 'value' ? fromValue(bound.kind.value) : undefined;
    if (!value) return { run: false, skipped: `binds ${name} to a value that is not JSON-like` };
    bindings[name] = value.value;
    fields[name] ??= 'dyn';
  }
  const expected = t.resultMatcher;
  let outcome;
  try {
    outcome = compileCel(t.expr, { fields }, { yields: 'any' }).evaluate(bindings);
  } catch (err) {
    if (!(err instanceof CelCompileError)) throw err;
    // An expression the specification says fails fails here too, only sooner: refused when written.
    if (expected.case === 'evalError' || expected.case === 'anyEvalErrors') return { run: true };
    // The suite runs these without its checker (disable_check): `false && 32`, `x || true` with x
    // unbound. A checked environment refuses them, as cel-go's checker does; the box checks always.
    if (t.disableCheck) return { run: false, skipped: 'runs unchecked in the suite, refused by a checker' };
    // A protobuf message literal (`TestAllTypes{…}`): the box's expressions see only JSON.
    if (err.problems.every((p) => p.includes('messages are not available'))) return { run: false, skipped: 'builds a protobuf message' };
    expect.fail(`${test.name}: ${t.expr}: refused: ${err.problems.join('; ')}`);
  }
  if (expected.case === 'evalError' || expected.case === 'anyEvalErrors') {
    expect(outcome.kind, `${test.name}: ${t.expr}: should be an error`).to.equal('error');
    return { run: true };
  }
  if (expected.case === 'value' || expected.case === undefined) {
    const want = expected.case === 'value' ? fromValue(expected.value) : { value: true };
    if (!want) return { run: false, skipped: 'expects a value that is not JSON-like' };
    expect(outcome.kind, `${test.name}: ${t.expr}: ${outcome.kind === 'error' ? outcome.message : ''}`).to.equal('value');
    if (outcome.kind === 'value')
      expect(same(outcome.value, want.value), `${test.name}: ${t.expr}: got ${String(outcome.value)}`).to.equal(true);
    return { run: true };
  }
  return { run: false, skipped: `expects ${expected.case}` };
}

describe('CEL conformance (the sections a policy uses, through compileCel)', function () {
  const suite = getConformanceSuite();
  const file = (name: string): IncrementalTestSuite | undefined => suite.suites.find((s) => s.name === name);
  let ran = 0;
  const skipped = new Map<string, number>();

  for (const [fileName, { sections }] of Object.entries(SECTIONS)) {
    for (const sectionName of sections) {
      it(`${fileName}/${sectionName}`, function () {
        const section = file(fileName)?.suites.find((s) => s.name === sectionName);
        expect(section, `${fileName}/${sectionName} is in the suite`).to.not.equal(undefined);
        const failures: string[] = [];
        for (const test of section!.tests) {
          try {
            const verdict = runCase(test);
            if (verdict.run) ran++;
            else skipped.set(verdict.skipped, (skipped.get(verdict.skipped) ?? 0) + 1);
          } catch (err) {
            failures.push(err instanceof Error ? err.message : String(err));
          }
        }
        expect(failures).to.deep.equal([]);
      });
    }
  }

  after(function () {
    console.log(`    ${ran} conformance cases run; skipped: ${JSON.stringify(Object.fromEntries(skipped))}`);
    // A lower bound: a change that skipped everything (or most) would pass every section above.
    expect(ran).to.be.at.least(1000);
  });
});
