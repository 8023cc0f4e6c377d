// GET /Client/<id> and /AccessPolicy/<id> are served from memory, yet a GET
// that follows a PUT never returns the older record — on another process of the
// box too (the read fence, api/cache/read-fence.ts).
import { expect } from 'chai';
import { Box } from '../support/box.js';

describe('read-your-writes across processes', function () {
  this.timeout(120_000);
  let writer: Box;
  let reader: Box;
  let token: string;

  before(async function () {
    writer = await Box.start();
    reader = await writer.startAnother();
    token = await writer.rootToken();
  });
  after(async function () {
    await Promise.all([writer?.stop(), reader?.stop()]);
  });

  it('a GET on one process after a PUT on another always sees the PUT, for Clients and AccessPolicies', async function () {
    // Warm the reader's caches first, so a stale copy is there to be served if the fence did not hold.
    await writer.json('PUT', '/Client/fenced', { grant_types: ['client_credentials'], secret: 'secret-123', description: 'v0' }, token);
    await writer.json('PUT', '/AccessPolicy/fenced', { engine: 'matcho', matcho: { uri: '/v0' } }, token);
    expect((await reader.json('GET', '/Client/fenced', undefined, token)).body.description).to.equal('v0');
    for (let i = 1; i <= 100; i++) {
      const put = await writer.json('PUT', '/Client/fenced', { grant_types: ['client_credentials'], description: `v${i}` }, token);
      expect(put.status).to.equal(200);
      const policy = await writer.json('PUT', '/AccessPolicy/fenced', { engine: 'matcho', matcho: { uri: `/v${i}` } }, token);
      expect(policy.status).to.equal(200);
      const [client, read] = await Promise.all([
        reader.json('GET', '/Client/fenced', undefined, token),
        reader.json('GET', '/AccessPolicy/fenced', undefined, token),
      ]);
      expect(client.body.description, `round ${i}`).to.equal(`v${i}`);
      expect(client.body.meta.versionId).to.equal(put.body.meta.versionId);
      expect(read.body.matcho.uri, `round ${i}`).to.equal(`/v${i}`);
    }
    // A deleted record is gone for the reader at once, too.
    await writer.json('DELETE', '/Client/fenced', undefined, token);
    expect((await reader.json('GET', '/Client/fenced', undefined, token)).status).to.equal(404);
  });

  it('a refresh token its process remembers is refused at once when another process closed its session', async function () {
    await writer.json(
      'PUT',
      '/Client/refresher',
      {
        grant_types: ['client_credentials'],
        secret: 'secret-123',
        auth: { client_credentials: { refresh_token: true } },
      },
      token,
    );
    await writer.json('PUT', '/AccessPolicy/refresher', { engine: 'allow', link: [{ id: 'refresher', resourceType: 'Client' }] }, token);
    for (let i = 0; i < 20; i++) {
      // Issued by the writer, which remembers its holder; used once there; closed through the reader.
      const issued = await writer.form('/auth/token', {
        grant_type: 'client_credentials',
        client_id: 'refresher',
        client_secret: 'secret-123',
      });
      const refresh = { grant_type: 'refresh_token', client_id: 'refresher', refresh_token: issued.body.refresh_token };
      expect((await writer.form('/auth/token', refresh)).status).to.equal(200);
      const session = (await reader.json('DELETE', '/Session', undefined, issued.body.access_token)).body.id;
      expect(session).to.be.a('string');
      const after = await writer.form('/auth/token', refresh);
      expect(after.body.error, `round ${i}`).to.equal('invalid_grant');
    }
  });
});
