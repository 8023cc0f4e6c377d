import { expect } from 'chai';
import { readYaml, YamlError } from '../../api/yaml.js';

function refusal(text: string, limits?: Parameters<typeof readYaml>[1]): YamlError {
  try {
    readYaml(text, limits);
  } catch (err) {
    expect(err).to.be.an.instanceOf(YamlError);
    return err as YamlError;
  }
  throw new Error(`read without a refusal: ${text.slice(0, 80)}`);
}

describe('readYaml', function () {
  it('reads every document as plain values', function () {
    expect(readYaml('a: 1\nb: [x, {c: true}]\n---\n- 2\n')).to.deep.equal([{ a: 1, b: ['x', { c: true }] }, [2]]);
    expect(readYaml('')).to.deep.equal([]);
    expect(readYaml('{"json": "too", "n": null}')).to.deep.equal([{ json: 'too', n: null }]);
  });

  it('refuses a key given twice, in block and flow mappings, at any depth, saying where', function () {
    expect(refusal('a: 1\nb: 2\na: 3\n')).to.deep.include({ message: 'Map keys must be unique at line 3, column 1', reason: 'malformed' });
    expect(refusal('x:\n  y: {p: 1, q: 2, p: 3}\n').message).to.equal('Map keys must be unique at line 2, column 19');
    expect(refusal('- ok: 1\n- "k": 1\n  k: 2\n').message).to.match(/^Map keys must be unique at line 3/);
    // As yaml compares keys: by value, so 1 and 0x1 are the same key, and 1 and "1" are not.
    expect(refusal('1: a\n0x1: b\n').message).to.match(/unique/);
    expect(readYaml('1: a\n"1": b\n')).to.have.length(1);
  });

  it('finds a key given twice among 37,000 without comparing every pair', function () {
    // The defect was a stall: yaml's own check took 35 s here. The bound is far above the second this takes.
    this.timeout(15_000);
    const keys = Array.from({ length: 37_000 }, (_, i) => `k${i.toString(36)}: 0\n`).join('');
    expect(Object.keys(readYaml(keys)[0] as object)).to.have.length(37_000);
    expect(refusal(`${keys}k0: 1\n`).message).to.equal('Map keys must be unique at line 37001, column 1');
  });

  it('counts tokens and flow nesting before parsing, when given limits', function () {
    const limits = { tokens: 100, flowDepth: 3 };
    expect(readYaml('a: [[[1]]]\n', limits)).to.deep.equal([{ a: [[[1]]] }]);
    expect(refusal('a: [[[[1]]]]\n', limits)).to.deep.include({ reason: 'too-deep' });
    expect(refusal('-\n'.repeat(60), limits)).to.deep.include({ reason: 'too-many-tokens', message: 'more than 100 YAML tokens' });
    // Brackets inside scalars are text, not nesting.
    expect(readYaml("a: '[[[['\nb: |\n  [[[[\nc: x[[[[\n", limits)).to.deep.equal([{ a: '[[[[', b: '[[[[\n', c: 'x[[[[' }]);
  });

  it('refuses a document nested past the stack, and aliases past 100, as YAML errors', function () {
    expect(refusal(`${'['.repeat(20_000)}${']'.repeat(20_000)}`)).to.deep.include({ reason: 'too-deep' });
    const laughs = [
      'a: &a [x, x]',
      ...Array.from({ length: 8 }, (_, i) => `${'bcdefghi'[i]}: &${'bcdefghi'[i]} [*${'abcdefgh'[i]}, *${'abcdefgh'[i]}]`),
    ];
    expect(refusal(`${laughs.join('\n')}\n`)).to.deep.include({ reason: 'malformed' });
  });
});
