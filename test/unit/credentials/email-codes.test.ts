// A sign-in code by email's arithmetic (api/credentials/email-codes.ts): six digits, read as a
// person types them, and a hash that means nothing without the key or on another factor's row.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { emailCodeHash, emailCodeTyped, newEmailCode } from '../../../api/credentials/email-codes.js';

describe('sign-in codes by email', function () {
  it('are six digits, leading zeros kept, and not the same twice in a row', function () {
    const codes = Array.from({ length: 200 }, newEmailCode);
    for (const code of codes) expect(code).to.match(/^\d{6}$/);
    expect(new Set(codes).size).to.be.greaterThan(190);
  });

  it('are read as typed: spaces and dashes dropped, anything else refused', function () {
    expect(emailCodeTyped(' 012 345 ')).to.equal('012345');
    expect(emailCodeTyped('012-345')).to.equal('012345');
    for (const wrong of ['', '12345', '1234567', '12345a', '１２３４５６']) expect(emailCodeTyped(wrong), wrong).to.equal(undefined);
  });

  it('are stored as an HMAC of the factor key, bound to their factor', function () {
    const key = randomBytes(32);
    const hash = emailCodeHash(key, 7, '012345');
    expect(hash).to.have.length(32);
    expect(emailCodeHash(key, 7, '012345').equals(hash)).to.equal(true);
    expect(emailCodeHash(key, 8, '012345').equals(hash), 'another factor').to.equal(false);
    expect(emailCodeHash(randomBytes(32), 7, '012345').equals(hash), 'another key').to.equal(false);
    expect(createHash('sha256').update('012345').digest().equals(hash), 'a plain hash').to.equal(false);
  });
});
