// What to ask the person for an authorization request, without a database or a browser:
// sign in, consent, grant or an error back to the client, from what the box knows.
import { expect } from 'chai';
import { decideInteraction, type InteractionFacts } from '../../../api/oauth/interaction.js';
import type { AuthorizationRequest, Prompt } from '../../../api/oauth/authorization-request.js';

const now = Date.parse('2026-11-23T12:00:00Z');
const minutesAgo = (m: number): Date => new Date(now - m * 60_000);

function request(change: Partial<Omit<AuthorizationRequest, 'prompt'>> & { prompt?: Prompt[] } = {}): AuthorizationRequest {
  const { prompt, ...rest } = change;
  return {
    responseType: 'code',
    responseMode: 'query',
    client: { resource: { resourceType: 'Client', id: 'app', grant_types: ['authorization_code'] }, managedBy: null, secretHash: null },
    redirectUri: 'https://app.example/cb',
    state: 's',
    scope: 'openid email',
    codeChallenge: undefined,
    nonce: undefined,
    claims: null,
    prompt: new Set(prompt ?? []),
    maxAge: undefined,
    loginHint: undefined,
    hintedUser: undefined,
    params: {},
    ...rest,
  };
}

const signedIn = { userId: '7', authTime: minutesAgo(30), amr: ['pwd'], provider: null };

function decide(change: Partial<InteractionFacts> = {}): string {
  const d = decideInteraction({
    request: request(),
    signedIn,
    signedInSinceRequest: false,
    consented: ['openid', 'email'],
    now,
    ...change,
  });
  if (d.next === 'error') return `error ${d.error}`;
  if (d.next === 'sign-in') return d.fresh ? 'sign in (fresh)' : 'sign in';
  if (d.next === 'grant') return d.remember ? 'grant, remembering the consent' : 'grant';
  if (d.next === 'step-up') return `step up to ${d.acr}`;
  return d.next;
}

describe('decideInteraction', function () {
  it('nobody signed in: the sign-in page, or login_required with prompt=none', function () {
    expect(decide({ signedIn: undefined })).to.equal('sign in');
    expect(decide({ signedIn: undefined, request: request({ prompt: ['none'] }) })).to.equal('error login_required');
  });

  it('signed in and consented (or first party): grant; more scopes than consented: the consent page', function () {
    expect(decide()).to.equal('grant');
    expect(decide({ consented: 'first-party', request: request({ scope: 'openid anything' }) })).to.equal('grant');
    expect(decide({ consented: ['openid'] })).to.equal('consent');
    expect(decide({ consented: [], request: request({ scope: undefined }) })).to.equal('grant');
    // Never allowed anything, not even a request without scopes: asked once.
    expect(decide({ consented: undefined, request: request({ scope: undefined }) })).to.equal('consent');
  });

  it('prompt=consent asks again; prompt=none never shows a page (consent_required)', function () {
    expect(decide({ request: request({ prompt: ['consent'] }) })).to.equal('consent');
    expect(decide({ consented: ['openid'], request: request({ prompt: ['none'] }) })).to.equal('error consent_required');
    expect(decide({ request: request({ prompt: ['none'] }) })).to.equal('grant');
  });

  it('prompt=login and select_account need a sign-in made after the request', function () {
    for (const p of ['login', 'select_account'] as const) {
      expect(decide({ request: request({ prompt: [p] }) })).to.equal('sign in (fresh)');
      expect(decide({ request: request({ prompt: [p] }), signedInSinceRequest: true })).to.equal('grant');
    }
  });

  it('max_age: a sign-in older than it is signed in again, unless it was made after the request', function () {
    expect(decide({ request: request({ maxAge: 3600 }) })).to.equal('grant');
    expect(decide({ request: request({ maxAge: 60 }) })).to.equal('sign in (fresh)');
    expect(decide({ request: request({ maxAge: 0 }) })).to.equal('sign in (fresh)');
    expect(decide({ request: request({ maxAge: 0 }), signedInSinceRequest: true })).to.equal('grant');
    expect(decide({ request: request({ maxAge: 60, prompt: ['none'] }) })).to.equal('error login_required');
  });

  it('id_token_hint naming someone else: sign in, whatever happened since', function () {
    expect(decide({ request: request({ hintedUser: '8' }), signedInSinceRequest: true })).to.equal('sign in');
    expect(decide({ request: request({ hintedUser: '7' }) })).to.equal('grant');
  });

  it('the consent form: deny is access_denied; allow grants and remembers, if the sign-in still holds', function () {
    expect(decide({ answer: 'deny', consented: [] })).to.equal('error access_denied');
    expect(decide({ answer: 'allow', consented: [] })).to.equal('grant, remembering the consent');
    expect(decide({ answer: 'allow', signedIn: undefined })).to.equal('signed-out');
    expect(decide({ answer: 'deny', signedIn: undefined })).to.equal('signed-out');
    expect(decide({ answer: 'allow', request: request({ prompt: ['login'] }) })).to.equal('sign in (fresh)');
    expect(decide({ answer: 'allow', request: request({ prompt: ['login'] }), signedInSinceRequest: true })).to.equal(
      'grant, remembering the consent',
    );
  });

  it('a sign-in short of the class wanted: a step-up, never a grant, not even from the consent form', function () {
    const mfa = 'urn:boxauth:acr:mfa' as const;
    expect(decide({ acrWanted: mfa })).to.equal('step up to urn:boxauth:acr:mfa');
    expect(decide({ acrWanted: mfa, answer: 'allow', consented: [] })).to.equal('step up to urn:boxauth:acr:mfa');
    expect(decide({ acrWanted: 'phr', signedIn: { ...signedIn, amr: ['pwd', 'otp', 'mfa'] } })).to.equal('step up to phr');
    expect(decide({ acrWanted: mfa, request: request({ prompt: ['none'] }) })).to.equal('error login_required');
    // Met: as before.
    expect(decide({ acrWanted: mfa, signedIn: { ...signedIn, amr: ['pwd', 'otp', 'mfa'] } })).to.equal('grant');
    expect(decide({ acrWanted: mfa, signedIn: { ...signedIn, amr: ['hwk', 'user', 'mfa'] } })).to.equal('grant');
    expect(decide({ acrWanted: 'urn:boxauth:acr:password' })).to.equal('grant');
    // Nobody signed in: the sign-in first (the step follows from it).
    expect(decide({ acrWanted: mfa, signedIn: undefined })).to.equal('sign in');
  });
});
