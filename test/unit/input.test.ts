// What a name a person reads must be, and what makes two emails one account.
import { expect } from 'chai';
import { emailKey, invisibleProblem } from '../../api/input.js';

describe('names people read', function () {
  it('a control, bidi, zero-width or other invisible character is named by its code point', function () {
    for (const [value, code] of [
      ['\u001b]0;owned\u0007@example.com', 'U+001B'],
      ['tab\t@example.com', 'U+0009'],
      ['next\u0085line@example.com', 'U+0085'],
      ['ann\u202Emoc.elpmaxe@example.com', 'U+202E'],
      ['ops\u2066', 'U+2066'],
      ['ad\u200Bmin@example.com', 'U+200B'],
      ['team\u200D', 'U+200D'],
      ['\uFEFFbom@example.com', 'U+FEFF'],
      ['soft\u00ADhyphen', 'U+00AD'],
      ['filler\u3164', 'U+3164'],
      ['line\u2028break', 'U+2028'],
      ['tag\u{E0041}', 'U+E0041'],
    ] as const) {
      expect(invisibleProblem(value), JSON.stringify(value)).to.equal(`holds a control or invisible character (${code})`);
    }
  });

  it('letters of every script, spaces and symbols are fine', function () {
    for (const value of ['élodie@example.com', 'Ωμέγα', 'Platform team', '東京@例え.jp', 'ops/🚀', 'K\u212A@x']) {
      expect(invisibleProblem(value), value).to.equal(undefined);
    }
  });

  it('emails that differ in case, composition or compatibility form are one key', function () {
    const same = (a: string, b: string) => expect(emailKey(a), `${a} ~ ${b}`).to.equal(emailKey(b));
    same('Élodie@Example.com', 'élodie@example.com');
    same('E\u0301lodie@example.com', '\u00C9LODIE@EXAMPLE.COM');
    same('\u212Aim@example.com', 'kim@example.com'); // the Kelvin sign
    same('\uFF4B\uFF49\uFF4D@example.com', 'KIM@example.com'); // fullwidth
    same('straße@example.com', 'STRASSE@example.com');
    same('STRA\u1E9EE@example.com', 'strasse@example.com'); // capital sharp s
    same('ΟΔΟΣ@example.com', 'οδοσ@example.com'); // final sigma
    same('ad\u200Bmin@example.com', 'admin@example.com');
    expect(emailKey('Élodie@Example.com')).to.equal('élodie@example.com');
  });

  it('different addresses stay different', function () {
    expect(emailKey('elodie@example.com')).not.to.equal(emailKey('élodie@example.com'));
    expect(emailKey('ann@example.com')).not.to.equal(emailKey('anne@example.com'));
  });
});
