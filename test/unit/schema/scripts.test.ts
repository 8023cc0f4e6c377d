// Look-alike addresses (api/schema/scripts.ts): a part of an address that mixes scripts beyond UTS
// #39's "Highly Restrictive" level is refused; a real address in one script, or Latin with
// Japanese, Chinese or Korean, is not.
import { expect } from 'chai';
import { mixedScriptProblem, mixedScripts } from '../../../api/schema/scripts.js';
import { emailProblem } from '../../../api/schema/people.js';
import { emailFrom } from '../../../api/people/upstream/profile.js';

describe('mixed-script addresses (UTS #39, Highly Restrictive)', function () {
  it('refuses Latin mixed with Cyrillic or Greek, in the local part or a label of the domain', function () {
    // а (U+0430), о (U+043E), е (U+0435) Cyrillic; ο (U+03BF), α (U+03B1) Greek.
    for (const address of [
      '\u0430dmin@localhost',
      'admin@l\u043Ecalhost',
      'p\u0430ypal@example.com',
      'ann@p\u0430ypal.com',
      'g\u03BFogle@example.com',
      'ann@ex\u03B1mple.com',
      'ann@example.c\u043Em',
    ]) {
      expect(mixedScriptProblem(address), address).to.be.a('string');
      expect(emailProblem(address), address).to.match(/^mixes scripts \(/);
    }
    expect(mixedScripts('\u0430dmin')).to.deep.equal(['Cyrl', 'Latn']);
    expect(mixedScriptProblem('\u0430dmin@localhost')).to.equal(
      'mixes scripts (Cyrillic, Latin) in one part: write each part of an address (before the @, and each label of the domain) in one script',
    );
    // Cyrillic with Greek is no better than either with Latin.
    expect(mixedScripts('\u03BF\u043E')).to.deep.equal(['Grek', 'Cyrl']);
  });

  it('takes real addresses in one script, and Latin with Japanese, Chinese or Korean', function () {
    for (const address of [
      'ann@example.com',
      'ann.lee+tag@example.co.uk',
      '\u043F\u0440\u0438\u043C\u0435\u0440@\u043F\u0440\u0438\u043C\u0435\u0440.\u0440\u0444', // пример@пример.рф
      'user@\u4F8B\u3048.jp', // user@例え.jp: Han and Hiragana are one script, Japanese
      '\u03B8\u03B5\u03CC\u03C2@\u03C0\u03B1\u03C1\u03AC\u03B4\u03B5\u03B9\u03B3\u03BC\u03B1.\u03B5\u03BB', // θεός@παράδειγμα.ελ
      'abc\u30C6\u30B9\u30C8@example.jp', // Latin with Katakana
      'kim\uD55C\uAD6D@example.kr', // Latin with Hangul
      '\u00C9lodie@ex\u00E4mple.de', // Latin letters outside ASCII
      '\uFF4B\uFF49\uFF4D@example.com', // fullwidth Latin (folded by emailKey, a script still Latin)
      '\u0627\u062E\u062A\u0628\u0627\u0631@\u0645\u062B\u0627\u0644.\u0625\u062E\u062A\u0628\u0627\u0631', // Arabic
      'user1-2_3@123.example', // digits and punctuation belong to every script
      'e\u0301cole@example.fr', // a combining mark takes its base's script
    ]) {
      expect(mixedScriptProblem(address), address).to.equal(undefined);
      expect(emailProblem(address), address).to.equal(undefined);
    }
  });

  it("makes an upstream provider's look-alike address unusable: nobody is made or linked by it", function () {
    expect(emailFrom('\u0430dmin@localhost').unusableEmail).to.match(/^mixes scripts \(Cyrillic, Latin\)/);
    expect(emailFrom('\u0430dmin@localhost')).not.to.have.property('email');
    expect(emailFrom('admin@localhost')).to.deep.equal({ email: 'admin@localhost' });
  });

  it('reads a name without "@" as one part (a SCIM userName)', function () {
    expect(mixedScriptProblem('j\u043Ehn.smith')).to.be.a('string');
    expect(mixedScriptProblem('john.smith')).to.equal(undefined);
  });

  it('refuses Latin with Han and Cyrillic, and Hangul with kana: beyond the sets UTS #39 allows together', function () {
    expect(mixedScripts('a\u4F8B\u0430')).to.have.length.above(1);
    expect(mixedScripts('\uD55C\u30C6')).to.deep.equal(['Hang', 'Kana']);
  });
});
