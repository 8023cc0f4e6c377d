// Policy regexes with nested quantifiers, against inputs crafted to make a backtracking engine
// take hours: every request is answered as the policy says, and the box stays healthy meanwhile.
import { expect } from 'chai';
import { Box, basic, boxForSuite } from '../support/box.js';

describe('policy regexes run in linear time', function () {
  let box: Box;
  let root: string;
  const tokens: Record<string, string> = {};

  async function clientWithPolicy(id: string, policy: Record<string, unknown>): Promise<string> {
    const { secret } = await box.addClient(id, {}, { policy: false });
    const put = await box.json('PUT', `/AccessPolicy/${id}`, { ...policy, link: [{ id, resourceType: 'Client' }] }, root);
    expect(put.status, put.text).to.be.oneOf([200, 201]);
    const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
    return res.body.access_token;
  }

  boxForSuite((b, r) => ([box, root] = [b, r]));
  before(async function () {
    tokens.matcho = await clientWithPolicy('evil-matcho', {
      engine: 'matcho',
      matcho: { 'request-method': 'get', uri: '#^/Client/(/?a+)+$' },
    });
    tokens.schema = await clientWithPolicy('evil-schema', {
      engine: 'json-schema',
      schema: {
        type: 'object',
        required: ['params'],
        properties: {
          params: { type: 'object', properties: { q: { type: 'string', pattern: '^(a+)+$' } }, patternProperties: { '^(b+)+$': false } },
        },
      },
    });
  });

  it('answers crafted 40-character paths and values as the policies say, and /healthz meanwhile', async function () {
    this.timeout(10_000); // a request stuck in a backtracking regex would end the test here
    const near = (c: string): string => `${c.repeat(39)}!`;
    const [healthz, ...answers] = await Promise.all([
      box.request('GET', '/healthz'),
      box.json('GET', `/Client/${near('a')}`, undefined, tokens.matcho),
      box.json('GET', `/Client/${'a'.repeat(40)}`, undefined, tokens.matcho),
      box.json('GET', `/Client?q=${near('a')}`, undefined, tokens.schema),
      box.json('GET', `/Client?q=${'a'.repeat(40)}`, undefined, tokens.schema),
      box.json('GET', `/Client/absent?${near('b')}=1`, undefined, tokens.schema),
      box.json('GET', `/Client/absent?${'b'.repeat(40)}=1`, undefined, tokens.schema),
    ]);
    expect(healthz.status).to.equal(200);
    expect(answers.map((a) => a.status)).to.deep.equal([403, 404, 403, 200, 404, 403]); // 404: allowed, and absent
  });

  it('refuses (422) a policy whose pattern RE2 cannot run, naming the field', async function () {
    const matcho = await box.json('PUT', '/AccessPolicy/lookbehind', { engine: 'matcho', matcho: { uri: '#(?<=/)Client' } }, root);
    expect(matcho.status).to.equal(422);
    expect(matcho.body.errors).to.have.key('matcho');
    expect(matcho.body.errors.matcho[0]).to.match(/matcho\.uri .*RE2/);
    const schema = await box.json(
      'PUT',
      '/AccessPolicy/lookbehind',
      {
        engine: 'json-schema',
        schema: { properties: { uri: { type: 'string', pattern: '(?<=/)Client' } } },
      },
      root,
    );
    expect(schema.status).to.equal(422);
    expect(schema.body.errors).to.have.key('schema');
    expect((await box.json('GET', '/AccessPolicy/lookbehind', undefined, root)).status).to.equal(404);
  });
});
