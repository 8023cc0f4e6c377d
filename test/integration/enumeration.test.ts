// Which client ids exist, and what they are, is nobody's business until they
// authenticate: at the token, device, introspection and revocation endpoints an
// unknown client id gets the very answer a known one gets (public, confidential,
// without the grant), and guessing ids from one address meets the client
// authentication throttle like guessing secrets does.
import { expect } from 'chai';
import { Box, basic, boxForSuite, type JsonResponse } from '../support/box.js';

const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';
const cb = 'https://app.example/cb';
const UNKNOWN = 'no-such-client';

/** A response as a caller sees it: status, headers (but the date) and body. */
function whole(res: JsonResponse): { status: number; headers: Record<string, string>; body: unknown } {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name !== 'date') headers[name] = value;
  });
  return { status: res.status, headers, body: res.body };
}

describe('client enumeration', function () {
  this.timeout(120_000);

  describe('unknown and known client ids get the same answers', function () {
    let box: Box;
    // Many failures from one address here: the throttle is the next suite's.
    boxForSuite((b) => (box = b), { env: { BOXAUTH_CLIENT_AUTH_MAX_FAILURES: '100000' } });
    before(async function () {
      const grants = { authorization_code: { redirect_uri: cb, refresh_token: true }, device_code: { refresh_token: true } };
      const put = async (id: string, client: Record<string, unknown>): Promise<void> => {
        const res = await box.json('PUT', `/Client/${id}`, client, await box.rootToken());
        expect(res.status, res.text).to.equal(201);
      };
      await put('public-app', { grant_types: ['authorization_code', DEVICE], auth: grants });
      await put('confidential-app', {
        grant_types: ['client_credentials', 'authorization_code', DEVICE],
        secret: 'right-secret-1',
        auth: grants,
      });
      await put('no-grant-app', { grant_types: ['implicit'], auth: { implicit: { redirect_uri: cb } } });
      await put('service', { grant_types: ['client_credentials'], secret: 'right-secret-2' });
    });

    const KNOWN = ['public-app', 'confidential-app', 'no-grant-app', 'service'];
    const wrongSecret = (id: string) => ({ client_id: id, client_secret: 'wrong-secret-1' });
    const token = (params: Record<string, string>, headers: Record<string, string> = {}) => box.form('/auth/token', params, headers);
    const code = { grant_type: 'authorization_code', code: 'not-a-code', redirect_uri: cb, code_verifier: 'v'.repeat(43) };
    const refresh = { grant_type: 'refresh_token', refresh_token: 'not-a-refresh-token' };
    const device = { grant_type: DEVICE, device_code: 'not-a-device-code' };

    const probes: { what: string; send: (id: string) => Promise<JsonResponse>; known?: string[] }[] = [
      { what: 'token, authorization_code, client_id alone', send: (id) => token({ ...code, client_id: id }) },
      { what: 'token, authorization_code, a wrong secret', send: (id) => token({ ...code, ...wrongSecret(id) }) },
      { what: 'token, refresh_token, client_id alone', send: (id) => token({ ...refresh, client_id: id }) },
      {
        what: 'token, refresh_token, a wrong secret (Basic)',
        send: (id) => token(refresh, { Authorization: basic(id, 'wrong-secret-1') }),
      },
      { what: 'token, device_code, client_id alone', send: (id) => token({ ...device, client_id: id }) },
      { what: 'token, device_code, a wrong secret', send: (id) => token({ ...device, ...wrongSecret(id) }) },
      { what: 'token, client_credentials, client_id alone', send: (id) => token({ grant_type: 'client_credentials', client_id: id }) },
      { what: 'token, client_credentials, a wrong secret', send: (id) => token({ grant_type: 'client_credentials', ...wrongSecret(id) }) },
      // A public client with the device grant is served with client_id alone (RFC 8628 §3.1): that is what it is for.
      {
        what: 'device authorization, client_id alone',
        send: (id) => box.form('/auth/device', { client_id: id }),
        known: KNOWN.filter((id) => id !== 'public-app'),
      },
      { what: 'device authorization, a wrong secret', send: (id) => box.form('/auth/device', wrongSecret(id)) },
      { what: 'revocation, client_id alone', send: (id) => box.form('/auth/revoke', { token: 'not-a-token', client_id: id }) },
      { what: 'revocation, a wrong secret', send: (id) => box.form('/auth/revoke', { token: 'not-a-token', ...wrongSecret(id) }) },
      { what: 'introspection, client_id alone', send: (id) => box.form('/auth/introspect', { token: 'not-a-token', client_id: id }) },
      { what: 'introspection, a wrong secret', send: (id) => box.form('/auth/introspect', { token: 'not-a-token', ...wrongSecret(id) }) },
    ];

    for (const { what, send, known = KNOWN } of probes) {
      it(what, async function () {
        const unknown = whole(await send(UNKNOWN));
        expect(unknown.status).to.be.within(400, 499);
        for (const id of known) expect(whole(await send(id)), id).to.deep.equal(unknown);
      });
    }
  });

  describe('guessing client ids', function () {
    let box: Box;
    // The defaults: 10 failures per client id, 4 × 10 per address, in 60 s.
    boxForSuite((b) => (box = b));

    it('200 guesses from one address at the token and device endpoints reach 429 with Retry-After', async function () {
      const guesses = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          i % 2
            ? box.form('/auth/token', { grant_type: 'refresh_token', refresh_token: 'not-a-refresh-token', client_id: `guess-${i}` })
            : box.form('/auth/device', { client_id: `guess-${i}` }),
        ),
      );
      const statuses = guesses.map((r) => r.status);
      expect(statuses.filter((s) => s !== 429).length, JSON.stringify(statuses)).to.be.at.most(40);
      const throttled = guesses.find((r) => r.status === 429)!;
      expect(throttled.body.error).to.equal('too_many_requests');
      expect(Number(throttled.headers.get('retry-after'))).to.be.within(1, 60);
    });
  });
});
