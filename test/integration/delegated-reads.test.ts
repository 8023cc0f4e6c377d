// A search answers a reader whose policies allow only some records (one App's administrator) the
// records it may GET one by one, and a total that says nothing of the others; a reader allowed
// everything, and the root client, find them all, as before.
import { expect } from 'chai';
import { Box, basic, boxForSuite } from '../support/box.js';

describe('searches read by a delegated administrator', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));

  /** A client whose only policy is `matcho` (linked to it), and a token of it. */
  async function reader(id: string, matcho: Record<string, unknown>): Promise<string> {
    const { secret } = await box.addClient(id, {}, { policy: false });
    const res = await box.json(
      'PUT',
      `/AccessPolicy/${id}-reads`,
      { engine: 'matcho', link: [{ id, resourceType: 'Client' }], matcho },
      root,
    );
    expect(res.status, res.text).to.equal(201);
    return (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) })).body
      .access_token as string;
  }
  const search = async (path: string, token: string): Promise<{ total: number; ids: string[] }> => {
    const res = await box.json('GET', path, undefined, token);
    expect(res.status, res.text).to.equal(200);
    return { total: res.body.total, ids: res.body.entry.map((e: any) => e.resource.id).sort() };
  };

  before(async function () {
    for (const app of ['wiki', 'payroll', 'crm']) await box.json('PUT', `/App/${app}`, { urls: [`https://${app}.example`] }, root);
  });

  it("finds the App it administers, not the box's others, and their number is not told", async function () {
    const token = await reader('wiki-reader', {
      'request-method': 'get',
      params: { 'resource/type': 'App', 'resource/id': { '$one-of': ['nil?', '#^wiki$'] } },
    });
    expect(await search('/App', token)).to.deep.equal({ total: 1, ids: ['wiki'] });
    expect(await search('/App?_sort=id&_count=1', token)).to.deep.equal({ total: 0, ids: [] }); // crm first: not theirs
    expect((await box.json('GET', '/App/payroll', undefined, token)).status).to.equal(403);
    expect(await search('/App', root)).to.deep.include({ total: 3 });
  });

  it('a reader its policies let read every App finds them all', async function () {
    const token = await reader('all-apps-reader', { 'request-method': 'get', params: { 'resource/type': 'App' } });
    expect(await search('/App', token)).to.deep.equal({ total: 3, ids: ['crm', 'payroll', 'wiki'] });
  });
});
