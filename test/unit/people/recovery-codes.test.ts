import { expect } from 'chai';
import { tokenHash } from '../../../api/credentials/tokens.js';
import { hashOf, newRecoveryCodes, normalize } from '../../../api/people/ways/recovery-codes.js';

describe('recovery codes', function () {
  it('are ten codes of 80 random bits, xxxx-xxxx-xxxx-xxxx, without look-alike letters', function () {
    const codes = newRecoveryCodes();
    expect(codes).to.have.length(10);
    expect(new Set(codes).size).to.equal(10);
    for (const c of codes) expect(c).to.match(/^[0-9a-hjkmnp-tv-z]{4}(-[0-9a-hjkmnp-tv-z]{4}){3}$/);
  });

  it('read the same whatever the case, spaces and dashes, and O/I/L as 0/1', function () {
    expect(normalize('ABCD EFGH-JKMN pqrs')).to.equal('abcd-efgh-jkmn-pqrs');
    expect(normalize('  abcdefghjkmnpqrs ')).to.equal('abcd-efgh-jkmn-pqrs');
    expect(normalize('O0IL-0000-1111-2222')).to.equal('0011-0000-1111-2222');
    for (const bad of ['', 'abcd-efgh-jkmn', 'abcd-efgh-jkmn-pqrs-t', 'abcd-efgh-jkmn-pqru', 'abcd-efgh-jkmn-pqr!'])
      expect(normalize(bad), bad).to.equal(undefined);
  });

  it('are stored as the SHA-256 of their normal form (tokenHash), so any way of typing one matches', function () {
    const [code] = newRecoveryCodes();
    expect(hashOf(code!).equals(tokenHash(code!))).to.equal(true);
    expect(hashOf(code!.toUpperCase().replace(/-/g, ' ')).equals(hashOf(code!))).to.equal(true);
    expect(hashOf(newRecoveryCodes()[0]!).equals(hashOf(code!))).to.equal(false);
  });
});
