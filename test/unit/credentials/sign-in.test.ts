// What a person must still prove before a request is answered, asked of people
// alone: no authorization request, no browser, the clock given.
import { expect } from 'chai';
import {
  acceptedWays,
  asksForFreshSignIn,
  mustSignIn,
  unmetAtRefresh,
  type SignInAsked,
  type SignInFacts,
} from '../../../api/credentials/sign-in.js';

const now = Date.parse('2026-11-23T12:00:00Z');
const asked = (change: Partial<SignInAsked> = {}): SignInAsked => ({
  prompt: new Set(),
  maxAge: undefined,
  hintedUser: undefined,
  ...change,
});
const facts = (change: Partial<SignInFacts> = {}): SignInFacts => ({
  asked: asked(),
  signedIn: { userId: '7', authTime: new Date(now - 30 * 60_000), amr: ['pwd'], provider: null },
  signedInSinceRequest: false,
  now,
  ...change,
});

describe('credentials: what a sign-in must still prove', () => {
  it('asks nobody signed in, or someone other than the hinted user, to sign in', () => {
    expect(mustSignIn(facts({ signedIn: undefined }))).to.equal(true);
    expect(mustSignIn(facts({ asked: asked({ hintedUser: '8' }) }))).to.equal(true);
    expect(mustSignIn(facts({ asked: asked({ hintedUser: '7' }) }))).to.equal(false);
  });

  it('asks again for prompt=login and a max_age passed, unless the browser signed in since the request', () => {
    expect(mustSignIn(facts({ asked: asked({ prompt: new Set(['login']) }) }))).to.equal(true);
    expect(mustSignIn(facts({ asked: asked({ maxAge: 60 }) }))).to.equal(true);
    expect(mustSignIn(facts({ asked: asked({ maxAge: 3600 }) }))).to.equal(false);
    expect(mustSignIn(facts({ asked: asked({ prompt: new Set(['login']) }), signedInSinceRequest: true }))).to.equal(false);
  });

  it('asks a browser signed in a way the client does not accept to sign in again, fresh or not', () => {
    const viaCorp = { userId: '7', authTime: new Date(now - 60_000), amr: ['pwd'], provider: 'corp' };
    expect(mustSignIn(facts({ accepted: ['corp'] }))).to.equal(true); // the box's own sign-in
    expect(mustSignIn(facts({ accepted: ['corp'], signedInSinceRequest: true }))).to.equal(true);
    expect(mustSignIn(facts({ accepted: ['box'] }))).to.equal(false);
    expect(mustSignIn(facts({ accepted: ['box'], signedIn: viaCorp }))).to.equal(true);
    expect(mustSignIn(facts({ accepted: ['corp', 'box'], signedIn: viaCorp }))).to.equal(false);
    expect(mustSignIn(facts({ signedIn: viaCorp }))).to.equal(false); // unset: every way
  });

  it('accepts the ways both the client and the app accept', () => {
    expect(acceptedWays(undefined, undefined)).to.equal(undefined);
    expect(acceptedWays(['corp', 'box'], undefined)).to.deep.equal(['corp', 'box']);
    expect(acceptedWays(undefined, ['corp'])).to.deep.equal(['corp']);
    expect(acceptedWays(['corp', 'box'], ['corp', 'ldap'])).to.deep.equal(['corp']);
    expect(acceptedWays(['box'], ['corp'])).to.deep.equal([]); // none: nobody gets in
  });

  it('marks a request that waits for a sign-in made for it', () => {
    expect(asksForFreshSignIn(asked({ prompt: new Set(['select_account']) }))).to.equal(true);
    expect(asksForFreshSignIn(asked({ maxAge: 0 }))).to.equal(true);
    expect(asksForFreshSignIn(asked({ prompt: new Set(['consent']) }))).to.equal(false);
  });
});

describe('credentials: what a grant’s refresh asks of the sign-in behind it now', () => {
  const [password, mfa, passkey] = ['urn:boxauth:acr:password', 'urn:boxauth:acr:mfa', 'phr'] as const;

  it('nothing, when no rule asks more than was proved', () => {
    expect(unmetAtRefresh(password, undefined, false)).to.equal(undefined);
    expect(unmetAtRefresh(mfa, mfa, true)).to.equal(undefined);
    expect(unmetAtRefresh(passkey, mfa, true)).to.equal(undefined);
    expect(unmetAtRefresh(password, 'not-an-acr', false)).to.equal(undefined);
  });

  it("a client's minimum_acr above the sign-in, first", () => {
    expect(unmetAtRefresh(password, mfa, true)).to.deep.equal({ rule: 'client', wants: mfa });
    expect(unmetAtRefresh(mfa, passkey, false)).to.deep.equal({ rule: 'client', wants: passkey });
  });

  it("a group's second factor, for a sign-in that proved a password alone", () => {
    expect(unmetAtRefresh(password, undefined, true)).to.deep.equal({ rule: 'group', wants: mfa });
    expect(unmetAtRefresh(password, password, true)).to.deep.equal({ rule: 'group', wants: mfa });
  });
});
