// Passkeys' pure parts (api/people/passkeys.ts): the relying party of a base URL, the opaque
// user handle, what a passkey proves, names, when a step may take a new passkey, and the
// checks of a registration and an assertion made by a software authenticator.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import {
  assertedCredentialId,
  assertedUserHandle,
  checkAssertion,
  checkRegistration,
  defaultPasskeyName,
  knownTransports,
  mayEnrolInStep,
  passkeyAmr,
  passkeyName,
  registrationOptions,
  relyingParty,
  userHandle,
} from '../../../api/people/ways/webauthn.js';
import { NO_FACTORS } from '../../../api/factor-kinds.js';
import type { PersonsFactors } from '../../../api/people/factors.js';
import { SoftAuthenticator } from '../../support/authenticator.js';

const none: PersonsFactors = { ...NO_FACTORS, groupRequires: false, mustEnrol: false };

describe('passkeys (people)', function () {
  it('the relying party is the base URL: its host name for the id (no port, no path), its origin', function () {
    expect(relyingParty('https://auth.example.com', 'box')).to.deep.equal({
      id: 'auth.example.com',
      origin: 'https://auth.example.com',
      name: 'box',
    });
    expect(relyingParty('https://example.com:8443/boxauth', 'box')).to.deep.equal({
      id: 'example.com',
      origin: 'https://example.com:8443',
      name: 'box',
    });
  });

  it('the user handle is opaque and stable: 32 bytes, one per person and key, not the id', function () {
    const key = randomBytes(32);
    expect(userHandle(key, 7)).to.have.length(32);
    expect(userHandle(key, 7).equals(userHandle(key, 7))).to.equal(true);
    expect(userHandle(key, 7).equals(userHandle(key, 8))).to.equal(false);
    expect(userHandle(key, 7).equals(userHandle(randomBytes(32), 7))).to.equal(false);
  });

  it('amr: hwk for a device-bound passkey, swk for a synced one, user when it verified its person', function () {
    expect(passkeyAmr('singleDevice', true)).to.deep.equal(['hwk', 'user']);
    expect(passkeyAmr('multiDevice', true)).to.deep.equal(['swk', 'user']);
    expect(passkeyAmr('singleDevice', false)).to.deep.equal(['hwk']);
  });

  it('names: given ones trimmed and bounded; the default is the first "Passkey n" not taken', function () {
    expect(passkeyName('  Laptop ')).to.equal('Laptop');
    expect(passkeyName('')).to.equal(undefined);
    expect(passkeyName('x'.repeat(65))).to.equal(undefined);
    expect(passkeyName('a\nb')).to.equal(undefined);
    expect(passkeyName(3)).to.equal(undefined);
    expect(defaultPasskeyName([])).to.equal('Passkey 1');
    expect(defaultPasskeyName(['Passkey 1', 'Passkey 3'])).to.equal('Passkey 2');
  });

  it('a step takes a new passkey only as an enrolment, never in place of a factor the person has', function () {
    expect(mayEnrolInStep(['pwd'], { ...none, groupRequires: true })).to.equal(true);
    expect(mayEnrolInStep(['pwd'], { ...none, passkey: 1 })).to.equal(false);
    expect(mayEnrolInStep(['pwd'], { ...none, totp: 1 })).to.equal(false);
    // A TOTP given, a passkey asked for: the person adds one.
    expect(mayEnrolInStep(['pwd', 'otp', 'mfa'], { ...none, totp: 1 })).to.equal(true);
  });

  it('the asserted credential id and user handle are read only when well-formed', function () {
    expect(assertedCredentialId({ id: 'AAEC' })).to.deep.equal(Buffer.from([0, 1, 2]));
    expect(assertedCredentialId({ id: 'a b' })).to.equal(undefined);
    expect(assertedCredentialId(null)).to.equal(undefined);
    expect(assertedUserHandle({ response: { userHandle: 'AAEC' } })).to.deep.equal(Buffer.from([0, 1, 2]));
    expect(assertedUserHandle({ response: {} })).to.equal(undefined);
  });

  it("transports: only WebAuthn's values are kept, once each", function () {
    expect(knownTransports(['usb', 'internal', 'usb', '\u0000', 'x'.repeat(10_000), 7])).to.deep.equal(['usb', 'internal']);
    expect(knownTransports('usb')).to.deep.equal([]);
    expect(knownTransports(undefined)).to.deep.equal([]);
  });

  describe('checks', function () {
    const rp = relyingParty('https://auth.example.com', 'box');

    async function made(key = new SoftAuthenticator(rp.origin)) {
      const options = await registrationOptions(rp, { handle: randomBytes(32), email: 'ann@example.com' }, []);
      const passkey = await checkRegistration(rp, options.challenge, key.register(options));
      return { key, passkey: passkey! };
    }

    it('a registration is taken for its challenge, and refused for another or another origin', async function () {
      const { passkey } = await made();
      expect(passkey).to.include({ deviceType: 'singleDevice', userVerified: true, signCount: 1 });
      const key = new SoftAuthenticator('https://evil.example');
      const options = await registrationOptions(rp, { handle: randomBytes(32), email: 'ann@example.com' }, []);
      expect(await checkRegistration(rp, options.challenge, key.register(options))).to.equal(undefined);
      const other = new SoftAuthenticator(rp.origin);
      expect(await checkRegistration(rp, 'another-challenge', other.register(options))).to.equal(undefined);
      expect(await checkRegistration(rp, options.challenge, { id: 'x' })).to.equal(undefined);
    });

    it('an assertion is taken with a counter that grew, refused with one that did not (a cloned key)', async function () {
      const { key, passkey } = await made();
      const stored = { ...passkey, signCount: passkey.signCount };
      const good = await checkAssertion(rp, 'c1', stored, key.assert({ challenge: 'c1' }));
      expect(good).to.deep.equal({ newCount: 2, deviceType: 'singleDevice', userVerified: true });
      key.signCount = 1;
      expect(await checkAssertion(rp, 'c2', { ...stored, signCount: 2 }, key.assert({ challenge: 'c2' }))).to.equal(undefined);
      expect(await checkAssertion(rp, 'c3', stored, key.assert({ challenge: 'other' }))).to.equal(undefined);
    });

    it('a synced passkey without a counter is taken again and again (its counter stays 0)', async function () {
      const { key, passkey } = await made(new SoftAuthenticator(rp.origin, { synced: true, counter: false }));
      expect(passkey).to.include({ deviceType: 'multiDevice', backedUp: true, signCount: 0 });
      for (const c of ['c1', 'c2']) expect(await checkAssertion(rp, c, passkey, key.assert({ challenge: c }))).to.include({ newCount: 0 });
    });
  });
});
