// What an SSO request needs next (api/saml/idp.ts decideSso): the whole decision, from facts, with
// the clock given. The order matters: nobody signed in is asked to sign in (or, IsPassive, told
// NoPassive) before the policies are asked; a weaker sign-in steps up before any assertion; a
// person the app's policies do not admit gets nothing, not even after consenting.
import { expect } from 'chai';
import { decideSso, type SsoFacts } from '../../../api/saml/idp.js';

const NOW = Date.parse('2026-11-28T06:00:00Z');
const ANN = { userId: '1', authTime: new Date(NOW - 60_000), amr: ['pwd'], provider: null };

const facts = (more: Partial<SsoFacts> = {}): SsoFacts => ({
  request: { clientId: 'wiki', requestId: '_r', acsUrl: 'https://sp.example/acs', forceAuthn: false, isPassive: false },
  signedIn: ANN,
  signedInSinceRequest: false,
  accepted: undefined,
  acrWanted: undefined,
  admitted: true,
  consented: true,
  now: NOW,
  ...more,
});

describe('saml/idp decideSso', function () {
  it('gives an assertion to a person signed in, admitted and consenting', function () {
    expect(decideSso(facts())).to.deep.equal({ next: 'assertion', remember: false });
  });

  it('asks nobody signed in to sign in, or answers NoPassive without a page', function () {
    expect(decideSso(facts({ signedIn: undefined, admitted: undefined }))).to.deep.equal({ next: 'sign-in' });
    const passive = decideSso(facts({ signedIn: undefined, request: { ...facts().request, isPassive: true } }));
    expect(passive).to.include({ next: 'status', status: 'urn:oasis:names:tc:SAML:2.0:status:NoPassive' });
  });

  it('ForceAuthn: a sign-in made before the request is not enough, one made after it is', function () {
    const forced = { ...facts().request, forceAuthn: true };
    expect(decideSso(facts({ request: forced }))).to.deep.equal({ next: 'sign-in' });
    expect(decideSso(facts({ request: forced, signedInSinceRequest: true }))).to.deep.equal({ next: 'assertion', remember: false });
  });

  it('a sign-in another way than the client accepts is asked again', function () {
    expect(decideSso(facts({ accepted: ['corp-ldap'] }))).to.deep.equal({ next: 'sign-in' });
  });

  it('steps a weaker sign-in up before anything else is given', function () {
    expect(decideSso(facts({ acrWanted: 'urn:boxauth:acr:mfa' }))).to.deep.equal({ next: 'step-up', acr: 'urn:boxauth:acr:mfa' });
    expect(decideSso(facts({ acrWanted: 'urn:boxauth:acr:password' }))).to.deep.equal({ next: 'assertion', remember: false });
  });

  it('an unmet RequestedAuthnContext is NoAuthnContext, never an assertion', function () {
    const unmet = decideSso(facts({ request: { ...facts().request, unmetContext: true } }));
    expect(unmet).to.include({ next: 'status', status: 'urn:oasis:names:tc:SAML:2.0:status:NoAuthnContext' });
  });

  it('a NameIDPolicy the app is not given is InvalidNameIDPolicy, never an assertion', function () {
    const unmet = decideSso(facts({ request: { ...facts().request, unmetNameIdPolicy: true } }));
    expect(unmet).to.include({ next: 'status', status: 'urn:oasis:names:tc:SAML:2.0:status:InvalidNameIDPolicy' });
  });

  it('a person the policies do not admit gets no assertion, even answering the consent form', function () {
    expect(decideSso(facts({ admitted: false }))).to.deep.equal({ next: 'denied' });
    expect(decideSso(facts({ admitted: false, answer: 'allow' }))).to.deep.equal({ next: 'denied' });
  });

  it('asks for consent, remembers it when allowed, and answers RequestDenied when refused', function () {
    expect(decideSso(facts({ consented: false }))).to.deep.equal({ next: 'consent' });
    expect(decideSso(facts({ consented: false, answer: 'allow' }))).to.deep.equal({ next: 'assertion', remember: true });
    expect(decideSso(facts({ consented: false, answer: 'deny' }))).to.include({ next: 'status' });
    expect(decideSso(facts({ signedIn: undefined, answer: 'allow' }))).to.deep.equal({ next: 'signed-out' });
  });
});
