// Which way a client proved who it is, in what a person reads afterwards (issue 65, item 6): the
// audit line of each token issued, and the decision point's record of a refused request made with
// that token, name the method (`client_auth_method`): its secret in HTTP Basic or in the form, an
// assertion signed with its own key (private_key_jwt), or a workload's token from a trusted issuer.
import { expect } from 'chai';
import { Box, basic, eventually } from '../support/box.js';
import { TestIssuer } from '../support/issuer.js';
import { clientKey } from '../support/assertion.js';

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
const AUDIENCE = 'https://gated.example';

describe('the method that authenticated a client, in the audit and the decision records', function () {
  this.timeout(120_000);
  let issuer: TestIssuer;
  let box: Box;
  const key = clientKey();

  /** A fresh private_key_jwt assertion of `id`. */
  const assertion = (id: string): string => key.assertion(id, box.url);

  /** The audit lines written so far. */
  const auditLines = (): Record<string, any>[] =>
    box.logs.filter((l) => l.includes('"audit":true')).map((l) => JSON.parse(l) as Record<string, any>);

  before(async function () {
    issuer = await TestIssuer.start();
    box = await Box.start({ env: { BOXAUTH_TRUSTED_ISSUERS: JSON.stringify([issuer.trusted]) } });
    const root = await box.rootToken();
    // An App with no policy: every request to it is refused, and the refusal of a caller is recorded.
    expect((await box.json('PUT', '/App/gated', { urls: [box.url], audience: AUDIENCE }, root)).status).to.equal(201);
    const cc = { client_credentials: { token_format: 'jwt' } };
    await box.addClient('with-secret', { audience: [AUDIENCE], auth: cc }, { secret: 'with-secret-secret', policy: false });
    const keys = await box.json(
      'PUT',
      '/Client/with-key',
      {
        grant_types: ['client_credentials'],
        audience: [AUDIENCE],
        jwks: key.jwks,
        auth: cc,
      },
      root,
    );
    expect(keys.status, keys.text).to.equal(201);
    await box.addClient(
      'workload',
      { audience: [AUDIENCE], auth: { ...cc, workload: { issuer: issuer.url, serviceAccounts: [{ namespace: 'shop', name: 'orders' }] } } },
      { policy: false },
    );
  });

  after(async function () {
    await box?.stop();
    await issuer?.stop();
  });

  /** A token of `request`'s client, for the gated App. */
  async function token(params: Record<string, string>, headers: Record<string, string> = {}): Promise<string> {
    const res = await box.form('/auth/token', { grant_type: 'client_credentials', audience: AUDIENCE, ...params }, headers);
    expect(res.status, res.text).to.equal(200);
    return res.body.access_token as string;
  }

  it('client_secret_basic, client_secret_post, private_key_jwt and workload, each named', async function () {
    const now = Math.floor(Date.now() / 1000);
    const ways: Record<string, { client: string; token: string }> = {
      client_secret_basic: { client: 'with-secret', token: await token({}, { Authorization: basic('with-secret', 'with-secret-secret') }) },
      client_secret_post: {
        client: 'with-secret',
        token: await token({ client_id: 'with-secret', client_secret: 'with-secret-secret' }),
      },
      private_key_jwt: {
        client: 'with-key',
        token: await token({ client_assertion_type: JWT_BEARER, client_assertion: assertion('with-key') }),
      },
      workload: {
        client: 'workload',
        token: await token({
          client_assertion_type: JWT_BEARER,
          client_assertion: await issuer.token(box.url, 'shop', 'orders', { iat: now, nbf: now, exp: now + 600 }),
        }),
      },
    };
    const decisions: Record<string, string> = {};
    for (const [method, { token }] of Object.entries(ways)) {
      const refused = await box.request('GET', '/authz/forward-auth/gated', {
        headers: {
          'X-Forwarded-Method': 'GET',
          'X-Forwarded-Host': new URL(box.url).host,
          'X-Forwarded-Uri': '/x',
          Authorization: `Bearer ${token}`,
        },
      });
      expect(refused.status, method).to.equal(403);
      decisions[method] = refused.headers.get('x-boxauth-decision')!;
    }
    const sessionOf = (t: string): string => JSON.parse(Buffer.from(t.split('.')[1]!, 'base64url').toString()).jti as string;
    const lines = await eventually('the audit lines of the four tokens and their refusals', async () => {
      const all = auditLines();
      const issued = Object.values(ways).every(({ token }) =>
        all.some((e) => e.event === 'token_issued' && e.session === sessionOf(token)),
      );
      const decided = Object.values(decisions).every((id) => all.some((e) => e.event === 'decision' && e.id === id));
      return issued && decided && all;
    });
    for (const [method, { client, token }] of Object.entries(ways)) {
      const issued = lines.find((e) => e.event === 'token_issued' && e.session === sessionOf(token));
      expect(issued, method).to.include({ client, client_auth_method: method });
      const decision = lines.find((e) => e.event === 'decision' && e.id === decisions[method]);
      expect(decision, method).to.include({ client, allowed: false, client_auth_method: method });
    }
  });
});
