// compileCel (api/policy/cel/): the write-time check against the request object's shape, the
// cost estimate and the run-time limit, and explain.
import { expect } from 'chai';
import { CelCompileError, compileCel, COST_LIMITS, explain, withCelBudget } from '../../../../api/policy/cel/index.js';

const problemsOf = (source: string, env: 'box-api' | 'app' = 'box-api'): string[] => {
  try {
    compileCel(source, env);
    return [];
  } catch (err) {
    if (err instanceof CelCompileError) return err.problems;
    throw err;
  }
};

describe('compileCel', function () {
  it('refuses a field that cannot exist, naming it and what there is', function () {
    expect(problemsOf('request.usr == null')[0]).to.match(/^request\.usr: no such field \(request has request-method, uri/);
    expect(problemsOf('request.user.emial == "a"', 'app')[0]).to.match(/^request\.user\.emial: no such field/);
    expect(problemsOf('request.user.identities.exists(i, i.provder == "github")')[0]).to.match(/identities\[\]\.provder: no such field/);
  });

  it('reads a field named by an index with a string as that field, and open maps take any key', function () {
    expect(problemsOf('request["request-method"] == "get"')).to.deep.equal([]);
    expect(problemsOf('request["request-methd"] == "get"')[0]).to.match(/request-methd: no such field/);
    expect(problemsOf('request.params.anything == "x" && request.body.a.b.c == 1')).to.deep.equal([]);
    expect(
      problemsOf('request.headers["x-team"] == "a" && request.resource.properties.ownerID == request.user.email', 'app'),
    ).to.deep.equal([]);
  });

  it('refuses an unknown function, a wrong overload, a result that is not a bool', function () {
    expect(problemsOf('exec("x")')).to.deep.equal(['exec: no such function']);
    expect(problemsOf('request.user.email + 1 == "a"')).to.deep.equal(['_+_(string, int): no such overload']);
    expect(problemsOf('request.user.email')).to.deep.equal(['the expression is a string: a policy allows only when it is true']);
  });

  it('refuses, by its estimated cost, lists within lists and strings built in a loop', function () {
    expect(problemsOf('request.user.groups.exists(a, request.user.groups.exists(b, a == b))')[0]).to.match(/estimated cost/);
    expect(problemsOf('request.body.l.map(x, request.body.s + request.body.s).size() > 0')[0]).to.match(/estimated cost/);
    expect(problemsOf('request.user.groups.exists(g, g.startsWith("wiki-"))')).to.deep.equal([]);
  });

  it('allows only what evaluates, and says what it did not: values and errors', function () {
    const c = compileCel('request.user.email == request.params.owner && request.user.email_verified', 'box-api');
    const request = { user: { email: 'a@b', email_verified: true }, params: { owner: 'c@d' } };
    expect(c.evaluate({ request })).to.deep.equal({ kind: 'value', value: false });
    expect(c.evaluate({ request: { ...request, params: { owner: 'a@b' } } })).to.deep.equal({ kind: 'value', value: true });
    expect(c.evaluate({ request: { user: null, params: {} } }).kind).to.equal('error');
    const { parts } = explain(c, { request });
    expect(parts[0]).to.deep.equal({ expression: 'request.user.email == request.params.owner', value: 'false' });
    expect(parts).to.deep.include({ expression: 'request.params.owner', value: '"c@d"' });
  });

  it("says an error's message, and leaves the process's stack traces as they were", function () {
    const c = compileCel('request.user.email.matches("^a@")', 'box-api');
    const limit = Error.stackTraceLimit;
    expect(c.evaluate({ request: { user: { email: null } } })).to.deep.equal({
      kind: 'error',
      message: "found no matching overload for 'matches' applied to 'null_type.(string)'",
    });
    expect(Error.stackTraceLimit).to.equal(limit);
    expect(new Error('after').stack!.split('\n').length).to.be.greaterThan(1);
  });

  it("charges compiling a request's pattern by its length, and refuses one past 4,096 characters", function () {
    // The estimate sees a one-character subject; the pattern is the request's to choose.
    const c = compileCel('"a".matches(string(request.context.p))', 'app', { perCallLimit: 500 });
    const evaluate = (p: string) => c.evaluate({ request: { context: { p } } });
    expect(evaluate('a|b')).to.deep.equal({ kind: 'value', value: true });
    expect(evaluate(`(a|b)${'c'.repeat(3000)}`)).to.deep.equal({
      kind: 'error',
      message: 'the evaluation was stopped: over the cost limit of 500',
    });
    const long = compileCel('"a".matches(string(request.context.p))', 'app');
    const o = long.evaluate({ request: { context: { p: `(a|b)${'|c'.repeat(100_000)}` } } });
    expect(o.kind).to.equal('error');
    expect((o as { message: string }).message).to.include('over the limit of 4,096');
  });

  it("shares one budget among a request's evaluations, awaited ones too, and a nested request keeps it", async function () {
    const ints = `[${Array.from({ length: 200 }, (_, i) => i).join(',')}]`;
    // About 285,000 units each (every iteration, comparison and variable read): 70 of them would be 20 million.
    const c = compileCel(`${ints}.all(x, ${ints}.all(y, x != -1))`, 'app');
    const outcomes = await withCelBudget(async () => {
      const seen: string[] = [];
      for (let i = 0; i < 70; i++) {
        await Promise.resolve();
        seen.push(withCelBudget(() => c.evaluate({ request: {} })).kind);
      }
      return seen;
    });
    expect(outcomes.filter((k) => k === 'value').length).to.be.within(30, 40);
    expect(outcomes.at(-1)).to.equal('error');
    // Outside a request, each evaluation has its own limit only.
    expect(c.evaluate({ request: {} }).kind).to.equal('value');
  });

  it('stops an evaluation past its run-time limit, even one whose value would be true', function () {
    const groups = Array.from({ length: 2000 }, (_, i) => `g${i}`);
    const c = compileCel('request.user.groups.all(g, g.size() > 0) || true', 'box-api', { perCallLimit: 1000 });
    const o = c.evaluate({ request: { user: { groups } } });
    expect(o).to.deep.equal({ kind: 'error', message: 'the evaluation was stopped: over the cost limit of 1,000' });
    // The same under the default limit (Kubernetes' PerCallLimit) runs.
    expect(compileCel('request.user.groups.all(g, g.size() > 0)', 'box-api').evaluate({ request: { user: { groups } } })).to.deep.equal({
      kind: 'value',
      value: true,
    });
    expect(COST_LIMITS.perCall).to.equal(1_000_000);
  });

  it('refuses, before making it, a string past the longest a body may be: chained replaces cannot stall the box', function () {
    // Each replace of "" triples the string: the seventh would make 2 million characters. The
    // estimate cannot know (the uri is short when written), and the meter charges only after a call.
    const chained = compileCel(`request.uri${'.replace("", "ab")'.repeat(7)} == ""`, 'box-api');
    const outcome = chained.evaluate({ request: { uri: 'x'.repeat(1000) } });
    expect(outcome.kind).to.equal('error');
    expect(outcome).to.have.property('message').that.includes('over its limit of 262,144');
    // What replace and join mean is cel-go's (Go's strings.Replace and strings.Join).
    const meaning = compileCel(
      '"abc".replace("", "x") == "xaxbxcx" && "abc".replace("", "x", 2) == "xaxbc" && "aaa".replace("a", "b", -1) == "bbb" && ' +
        '"aaa".replace("a", "b", 1) == "baa" && "aXbXc".replace("X", "") == "abc" && ["a", "b"].join("-") == "a-b" && ["a"].join() == "a"',
      'box-api',
    );
    expect(meaning.evaluate({ request: {} })).to.deep.equal({ kind: 'value', value: true });
  });

  it('reaches no prototype through __proto__ or constructor keys', function () {
    const request = JSON.parse('{"params":{"__proto__":{"admin":true}},"body":{}}');
    expect(compileCel('request.params["__proto__"].admin == true', 'box-api').evaluate({ request })).to.deep.equal({
      kind: 'value',
      value: true,
    });
    expect(compileCel('request.body.constructor.name == "Object"', 'box-api').evaluate({ request }).kind).to.equal('error');
    expect(compileCel('has(request.body.toString)', 'box-api').evaluate({ request })).to.deep.equal({ kind: 'value', value: false });
  });

  it('takes a shape whose fields are the variables, and a result of any type when asked', function () {
    const c = compileCel(
      'user.groups.filter(g, g.startsWith("wiki-")).map(g, g.substring(5))',
      { fields: { user: { fields: { groups: { list: 'string' } } } } },
      { yields: 'any' },
    );
    expect(c).to.be.an('object');
  });
});
