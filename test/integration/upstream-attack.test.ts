// What an attacker tried against upstream sign-in (issue 38), each a test that failed before its
// fix: a pre-made account handed the real owner's identity, a look-alike address, an unlink that
// did not hold, a step-up or the device flow escaping Client.identityProviders. Box A signs people in through box B ("corp": trusted for emails) and box C ("public": a
// provider anyone can join, not trusted for emails). Real boxes on every side.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { Box } from '../support/box.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { stepAt, totpCode, base32Decode } from '../support/totp.js';
import { connectUpstream, idTokenIfAllowed, relyingParty, RP, TwoHostBrowser } from '../support/upstream.js';

const PASSWORD = 'a-good-password-1';
const DEVICE = 'urn:ietf:params:oauth:grant-type:device_code';

describe('ATTACK probes: upstream identity providers', function () {
  this.timeout(240_000);
  let a: Box;
  let b: Box;
  let c: Box;

  before(async function () {
    [a, b, c] = await Promise.all([
      // Self sign-up, the address proven after the first sign-in (no mail): the default without SMTP.
      Box.start({ env: { BOXAUTH_REGISTRATION: 'true' } }),
      Box.start({ hostname: 'localhost' }),
      Box.start({ hostname: 'localhost' }),
    ]);
    await connectUpstream(a, b, 'corp', { displayName: 'Corp', linking: { trustEmail: true } });
    await connectUpstream(a, c, 'public', { displayName: 'Public' });
    await relyingParty(a, 'rp');
    await relyingParty(a, 'only-box', { identityProviders: ['box'] });
    await relyingParty(a, 'only-corp', { identityProviders: ['corp'] });
    const res = await a.json(
      'PUT',
      '/Client/kube-corp',
      { grant_types: [DEVICE], scope: ['openid', 'email'], identityProviders: ['corp'], auth: { device_code: {} } },
      await a.rootToken(),
    );
    expect(res.status, res.text).to.equal(201);
  });
  after(async () => Promise.all([a?.stop(), b?.stop(), c?.stop()]));

  async function personAt(box: Box, email: string, emailVerified: boolean): Promise<void> {
    const res = await box.json('POST', '/users', { email, password: PASSWORD, email_verified: emailVerified }, await box.rootToken());
    expect(res.status, res.text).to.equal(201);
  }

  /** The `sub` an RP gets for the browser signed in at A (undefined: the browser is not let through). */
  const subAtA = async (browser: FormAgent, client = 'rp', extra: Record<string, string> = {}): Promise<string | undefined> =>
    (await idTokenIfAllowed(a, browser, client, extra))?.claims.sub as string | undefined;

  // HIGH: pre-account takeover. The attacker makes A's account for the victim's address through a
  // provider not trusted for emails; the victim's later sign-in through the trusted provider is
  // linked to that account by email, and the attacker, still linked, signs in as the victim.
  it('an account made from an unverified address is not linked to by a trusted provider (pre-account takeover)', async () => {
    const victim = `victim-${randomBytes(3).toString('hex')}@example.com`;
    await personAt(c, victim, false); // the attacker's account at the public provider, the address unproven
    await personAt(b, victim, true); // the victim at corp
    const attacker = new TwoHostBrowser(a, c);
    expect((await attacker.signIn('public', victim, PASSWORD)).status, 'made at A, unverified').to.equal(303);
    const victimBrowser = new TwoHostBrowser(a, b);
    const victimAnswer = await victimBrowser.signIn('corp', victim, PASSWORD);
    const attackerAgain = new TwoHostBrowser(a, c);
    expect((await attackerAgain.signIn('public', victim, PASSWORD)).status).to.equal(303);
    const attackerSub = await subAtA(attackerAgain.atA);
    const victimSub = victimAnswer.status === 303 ? await subAtA(victimBrowser.atA) : undefined;
    expect(attackerSub, 'the attacker signs in').to.be.a('string');
    expect(victimSub, `the victim and the attacker are one account of A (${victimAnswer.status})`).to.not.equal(attackerSub);
  });

  it('an account self-signed-up with an unproven address is not linked to by a trusted provider', async () => {
    const victim = `victim-${randomBytes(3).toString('hex')}@example.com`;
    await personAt(b, victim, true);
    const attacker = new FormAgent(a);
    const page = await attacker.get('/auth/sign-up');
    expect((await attacker.post('/auth/sign-up', { ...hiddenFields(page.text), email: victim, password: PASSWORD })).status).to.equal(303);
    const victimBrowser = new TwoHostBrowser(a, b);
    const victimAnswer = await victimBrowser.signIn('corp', victim, PASSWORD);
    const later = new FormAgent(a);
    expect((await later.signIn(victim, PASSWORD)).status).to.equal(303);
    const attackerSub = await subAtA(later);
    const victimSub = victimAnswer.status === 303 ? await subAtA(victimBrowser.atA) : undefined;
    expect(attackerSub, 'the attacker signs in').to.be.a('string');
    expect(victimSub, `the attacker\u2019s password opens the account the victim signs in to (${victimAnswer.status})`).to.not.equal(
      attackerSub,
    );
  });

  // HIGH: the trusted-email link finds the holder by emailKey, which folds look-alike domains
  // together (api/input.ts: "must never carry a proof from one to the other"). Whoever verified
  // an address at gıthub.example (a domain of their own) at a provider trusted for emails is
  // linked to the person of A at github.example.
  it('a trusted provider\u2019s verified address reaches only the same mailbox, not a look-alike', async () => {
    const tag = randomBytes(3).toString('hex');
    const target = `ops-${tag}@github.example`;
    const lookAlike = `ops-${tag}@g\u0131thub.example`; // dotless ı: another domain
    await personAt(a, target, true);
    await personAt(b, lookAlike, true);
    const owner = new FormAgent(a);
    expect((await owner.signIn(target, PASSWORD)).status).to.equal(303);
    const ownerSub = await subAtA(owner);
    const attacker = new TwoHostBrowser(a, b);
    const res = await attacker.signIn('corp', lookAlike, PASSWORD);
    const attackerSub = res.status === 303 ? await subAtA(attacker.atA) : undefined;
    expect(attackerSub, `the look-alike address signs in as ${target} (${res.status})`).to.not.equal(ownerSub);
  });

  // MEDIUM: an unlink does not hold for a provider trusted for emails: the next sign-in through
  // it finds the person by email and links them again, unasked.
  it('a provider the person unlinked does not link itself again by email', async () => {
    const email = `unl-${randomBytes(3).toString('hex')}@example.com`;
    await personAt(a, email, true);
    await personAt(b, email, true);
    const first = new TwoHostBrowser(a, b);
    expect((await first.signIn('corp', email, PASSWORD)).status, 'linked by the trusted email').to.equal(303);
    const own = new FormAgent(a);
    expect((await own.signIn(email, PASSWORD)).status).to.equal(303);
    const page = await own.get('/auth/account');
    const unlinked = await own.post('/auth/account/providers/unlink', { csrf: hiddenFields(page.text).csrf!, provider: 'corp' });
    expect(unlinked.status, unlinked.text.slice(0, 200)).to.equal(303);
    const again = new TwoHostBrowser(a, b);
    const res = await again.signIn('corp', email, PASSWORD);
    expect(res.status, 'the unlinked provider signs the person in again').to.not.equal(303);
  });

  // MEDIUM: Client.identityProviders bypass. A step-up (here: the person's own TOTP enrolled at
  // the step) makes a new browser session that forgets the provider of its first factor, so a
  // corp sign-in becomes "box" — a client that accepts only the box lets it through, and a client
  // that accepts only corp refuses its own people.
  it('a step-up keeps the provider the first factor was proven at', async () => {
    const email = `step-${randomBytes(3).toString('hex')}@example.com`;
    await personAt(b, email, true);
    const browser = new TwoHostBrowser(a, b);
    expect((await browser.signIn('corp', email, PASSWORD)).status).to.equal(303);
    expect(await subAtA(browser.atA, 'only-box'), 'a corp sign-in is not the box\u2019s').to.equal(undefined);
    // A step-up through any client that lets corp in: acr_values asks for a second factor.
    const verifier = randomBytes(32).toString('base64url');
    const asked = {
      response_type: 'code',
      client_id: 'rp',
      redirect_uri: RP.redirect,
      scope: 'openid',
      state: 's',
      acr_values: 'urn:boxauth:acr:mfa',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    };
    const step = await browser.atA.get(`/auth/authorize?${new URLSearchParams(asked)}`);
    expect(step.status, step.text.slice(0, 300)).to.equal(303);
    const enrol = await browser.atA.get(step.headers.get('location')!);
    expect(enrol.status, enrol.text.slice(0, 300)).to.equal(200);
    const secret = base32Decode(/id="totp-secret">([A-Z2-7]+)</.exec(enrol.text)![1]!);
    const action = /<form method="post" action="([^"]+)"/.exec(enrol.text)?.[1] ?? '/auth/sign-in/enrol';
    const done = await browser.atA.post(action.replace(/&amp;/g, '&'), {
      ...hiddenFields(enrol.text),
      code: totpCode(secret, stepAt(Date.now())),
    });
    // The recovery codes shown once, then on.
    expect(done.status, done.text.slice(0, 300)).to.equal(200);
    const onward = /<form method="post" action="([^"]+)"/.exec(done.text)![1]!.replace(/&amp;/g, '&');
    const on = await browser.atA.post(onward, hiddenFields(done.text));
    expect(on.status, on.text.slice(0, 300)).to.equal(303);
    expect(await subAtA(browser.atA, 'only-box'), 'never the box\u2019s own').to.equal(undefined);
    expect(await subAtA(browser.atA, 'only-corp'), 'still a corp sign-in').to.be.a('string');
  });

  // MEDIUM: the device flow never asks Client.identityProviders: a browser signed in with the
  // box's password connects a device to a client that accepts only corp.
  it('the device flow holds the browser to the ways its client accepts', async () => {
    const email = `dev-${randomBytes(3).toString('hex')}@example.com`;
    await personAt(a, email, true);
    const asked = (await a.form('/auth/device', { client_id: 'kube-corp', scope: 'openid email' })).body;
    const browser = new FormAgent(a);
    expect((await browser.signIn(email, PASSWORD)).status).to.equal(303);
    const complete = new URL(asked.verification_uri_complete as string);
    const page = await browser.get(complete.pathname + complete.search);
    if (page.status === 200 && page.text.includes('decision')) {
      await browser.post('/auth/device/verify', { ...hiddenFields(page.text), decision: 'allow' });
    }
    const tokens = await a.form('/auth/token', { grant_type: DEVICE, client_id: 'kube-corp', device_code: asked.device_code });
    expect(tokens.status, 'a password sign-in connected a corp-only device').to.not.equal(200);
  });
});
