import { expect } from 'chai';
import { hashSecret, SecretVerifier } from '../../../api/oauth/secrets.js';

describe('client secret verifier', function () {
  it('remembers a secret verified against a hash, and only that secret with that hash', async function () {
    const verifier = new SecretVerifier();
    const hash = await hashSecret('right-secret');
    expect(await verifier.verify('c', hash, 'right-secret')).to.equal(true);
    expect(await verifier.verify('c', hash, 'wrong-secret')).to.equal(false);
    expect(await verifier.verify('c', await hashSecret('other-secret'), 'right-secret')).to.equal(false);
  });

  it('remember() vouches for a secret just hashed without argon2; anything else is still checked', async function () {
    const verifier = new SecretVerifier();
    // Not an argon2 hash at all: only the remembered pair can pass.
    verifier.remember('c', 'unverifiable', 'fresh-secret');
    expect(await verifier.verify('c', 'unverifiable', 'fresh-secret')).to.equal(true);
    expect(await verifier.verify('c', 'unverifiable', 'another-secret')).to.equal(false);
    expect(await verifier.verify('c', 'changed-hash', 'fresh-secret')).to.equal(false);
  });
});
