// An attacker's pass over "what a sign-in proves" (docs/security.md#what-a-sign-in-proves): what
// a close (an unlink, a reset, a sign-out) leaves of a sign-in or a credential change that was
// under way when it came. Closing beats using: nothing begun before a close completes after it.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Box, type JsonResponse } from '../support/box.js';
import { hiddenFields } from '../support/form-agent.js';
import { connectUpstream, TwoHostBrowser } from '../support/upstream.js';
import { base32Decode, stepAt, totpCode } from '../support/totp.js';

const PASSWORD = 'a-good-password-1';
const MFA = 'urn:boxauth:acr:mfa';

const secretOf = (page: JsonResponse): Buffer => base32Decode(/id="totp-secret">([A-Z2-7]+)</.exec(page.text)![1]!);
const where = (res: JsonResponse): string => res.headers.get('location') ?? '';

describe('an unlink ends the sign-ins through the provider that are half done', function () {
  this.timeout(120_000);
  let a: Box;
  let b: Box;

  before(async function () {
    [a, b] = await Promise.all([Box.start(), Box.start({ hostname: 'localhost' })]);
    await connectUpstream(a, b, 'corp', { displayName: 'Corp', linking: { trustEmail: true } });
  });
  after(async () => Promise.all([a?.stop(), b?.stop()]));

  it("ATTACK: a thief at the provider, half-way through a sign-in asked for mfa, enrols after the administrator's unlink", async function () {
    const email = `bea-${randomBytes(3).toString('hex')}@example.com`;
    expect((await b.json('POST', '/users', { email, password: PASSWORD }, await b.rootToken())).status).to.equal(201);
    // Bea's first sign-in through corp makes her a person of A, with no factor yet.
    expect((await new TwoHostBrowser(a, b).signIn('corp', email, PASSWORD)).status).to.equal(303);
    const found = (await a.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, await a.rootToken())).body;
    const id = Number((found.entry?.[0]?.resource ?? found[0]).id);

    // Her account at corp is taken over: the thief signs in to A through it, asking for mfa, and
    // is sent to enrol an authenticator app of their own (she has none to give).
    const thief = new TwoHostBrowser(a, b);
    const page = await thief.atA.get('/auth/sign-in?return_to=%2Fauth%2Fsigned-in');
    const start = await thief.atA.post('/auth/upstream/corp/start', {
      csrf: hiddenFields(page.text).csrf!,
      return_to: '/auth/signed-in',
      acr: MFA,
    });
    const back = await thief.callback(await thief.atUpstream(start, email, PASSWORD));
    expect(back.status, back.text).to.equal(303);
    expect(where(back)).to.match(/^\/auth\/sign-in\/enrol\?/);

    // The administrator answers the takeover as the guides say: the identity is unlinked.
    const unlinked = await a.json('DELETE', `/users/${id}/identities/corp`, undefined, await a.rootToken());
    expect(unlinked.status, unlinked.text).to.equal(204);

    // The thief's sign-in through corp goes no further: no enrolment, no browser signed in as Bea.
    const enrol = await thief.atA.get(where(back));
    if (enrol.status === 200) {
      const code = totpCode(secretOf(enrol), stepAt(Date.now()));
      const done = await thief.atA.post('/auth/sign-in/enrol', { ...hiddenFields(enrol.text), code });
      if (done.status === 200) await thief.atA.post('/auth/sign-in/continue', hiddenFields(done.text));
    }
    expect((await thief.atA.get('/auth/signed-in')).text).to.not.include('You are signed in as');
    const factors = await a.json('GET', `/users/${id}/factors`, undefined, await a.rootToken());
    expect(factors.body.factors, 'a factor the thief enrolled after the unlink').to.deep.equal([]);
    expect(enrol.status, 'the enrolment page after the unlink').to.equal(403);
  });
});
