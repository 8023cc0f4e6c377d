import { expect } from 'chai';
import {
  boxPasswordRule,
  commonPasswords,
  contextWords,
  passwordCheck,
  passwordProblem,
  PASSWORD_MAX,
  type CommonPasswords,
  type PasswordRule,
} from '../../../api/schema/password-policy.js';

const TOO_SHORT = /^is too short: at least (\d+) characters$/;
const COMMON = 'is one of the most used passwords: choose another';
const PATTERN = /^is repeated or sequential characters/;

describe('the password rule (NIST SP 800-63B §5.1.1.2)', function () {
  let common: CommonPasswords;
  /** The rule of a box named `default` with this minimum, for ann.lee@example.com. */
  const rule = (minLength = 8, email: string | undefined = 'ann.lee@example.com'): PasswordRule =>
    boxPasswordRule({ passwordMinLength: minLength, box: 'default' }, email);
  const problem = (password: string, r = rule()): string | undefined => passwordProblem(password, r, common);

  before(async function () {
    common = await commonPasswords();
  });

  it('ships the most used passwords with the box: 49,000 of them, folded to lower case', function () {
    expect(common.size).to.be.greaterThan(40_000);
    expect(common.has('password')).to.equal(true);
    expect([...common].every((p) => p === p.normalize('NFC').toLowerCase())).to.equal(true);
  });

  it('refuses a password shorter than the minimum, and takes one exactly at it', function () {
    expect(problem('k7#pQ2v')).to.match(TOO_SHORT).and.include('at least 8 characters');
    expect(problem('k7#pQ2vL')).to.equal(undefined);
    expect(problem('k7#pQ2vLx9m', rule(12))).to.equal('is too short: at least 12 characters');
    expect(problem('k7#pQ2vLx9mR', rule(12))).to.equal(undefined);
    expect(problem('')).to.match(TOO_SHORT);
  });

  it('counts characters as people see them: Unicode code points, after NFC', function () {
    // Eight accented letters typed decomposed are sixteen UTF-16 units but eight characters; seven emoji are fourteen units.
    expect(problem('éàüöçñåø'.normalize('NFD'))).to.equal(undefined);
    expect(problem('🐙🦀🦑🐡🐠🐬🐳')).to.match(TOO_SHORT);
    expect(problem('🐙🦀🦑🐡🐠🐬🐳🦈')).to.equal(undefined);
  });

  it('takes up to 1024 characters: long passphrases fit', function () {
    const passphrase = 'correct horse battery staple by the lighthouse';
    expect(problem(passphrase)).to.equal(undefined);
    expect(problem(passphrase, rule(64))).to.match(TOO_SHORT);
    const longest = Array.from({ length: PASSWORD_MAX }, (_, i) => String.fromCharCode(97 + ((i * 7) % 26))).join('');
    expect(problem(longest)).to.equal(undefined);
    expect(problem(longest + 'x')).to.equal('is too long: at most 1024 characters');
  });

  it('refuses the most used passwords, whatever their case and Unicode form', function () {
    for (const password of ['password', '12345678', 'Password1', 'PASSWORD', 'PaSsWoRd', 'iloveyou', 'qwertyuiop', 'p@ssw0rd', 'trustno1'])
      expect(problem(password), password).to.equal(COMMON);
    // Spaces and punctuation added to one of them do not make another password.
    for (const password of ['password-1', 'Pass Word 1', 'i love you', 'change-me!', 'secret-123'])
      expect(problem(password), password).to.equal(COMMON);
    // A password of a list written with composed or decomposed letters is the same password (the shipped list is ASCII).
    const listed = new Set(['été-à-paris']);
    expect(passwordProblem('ÉTÉ-À-PARIS'.normalize('NFD'), rule(), listed)).to.equal(COMMON);
    expect(passwordProblem('Été-à-Paris'.normalize('NFC'), rule(), listed)).to.equal(COMMON);
  });

  it('refuses repeated or sequential characters (NIST: "aaaaaa", "1234abcd")', function () {
    for (const password of [
      'xxxxxxxxxx',
      'zzzzzzzzzzzzzzzz',
      'abcdefghij',
      '98765432',
      'qrstqrstqrst',
      'mnop5678',
      'zyxw9876',
      'k7k7k7k7k7',
    ])
      expect(problem(password), password).to.match(PATTERN);
    // A piece as long as the minimum, repeated, is as strong as the piece: taken.
    expect(problem('k7#pQ2vLk7#pQ2vL')).to.equal(undefined);
    expect(problem('k7#pQ2vLk7#pQ2vL', rule(12))).to.match(PATTERN);
  });

  it('refuses a password too much like the email address, the box or the service', function () {
    expect(problem('ann.lee@example.com')).to.equal('is too much like the email address: choose another');
    expect(problem('Ann.Lee2024!')).to.equal('is too much like the email address: choose another');
    expect(problem('annlee-1990')).to.equal('is too much like the email address: choose another');
    expect(problem('Default-2024!')).to.equal("is too much like the box's name: choose another");
    expect(problem('boxauth-admin')).to.equal('is too much like the name of this service: choose another');
    // A name in a passphrase that is long enough without it is fine.
    expect(problem('ann climbs the lighthouse at dawn')).to.equal(undefined);
    // The same password for another person is not like their address.
    expect(problem('Ann.Lee2024!', rule(8, 'bo@example.com'))).to.equal(undefined);
  });

  it('says the user name, not an address, for a person a directory named without one', function () {
    expect(problem('jdoe-2024!', rule(8, 'jdoe'))).to.equal('is too much like the user name: choose another');
  });

  it('takes a password of eight characters that is none of these', function () {
    for (const password of ['Tr4vel!ng', 'k7#pQ2vL', 'plum-sky', 'w0mbat#9']) expect(problem(password), password).to.equal(undefined);
  });

  it('reads the context: the address, its local part and its pieces, the box and its namespace, the service', function () {
    expect(contextWords('team-a/orders', 'Ann.Lee@Example.com').map((c) => c.word)).to.deep.equal([
      'ann.lee@example.com',
      'ann.lee',
      'ann',
      'lee',
      'team-a',
      'orders',
      'boxauth',
    ]);
    // Pieces of fewer than 3 characters are no words.
    expect(contextWords('default', 'jo.x@example.com').map((c) => c.word)).to.deep.equal([
      'jo.x@example.com',
      'jo.x',
      'default',
      'boxauth',
    ]);
  });

  it("passwordCheck is the box's rule, its list loaded once", async function () {
    const check = await passwordCheck({ passwordMinLength: 10, box: 'default' });
    expect(check('k7#pQ2vL', 'ann@example.com')).to.equal('is too short: at least 10 characters');
    expect(check('ann@example.com', 'ann@example.com')).to.match(/email address/);
    expect(check('k7#pQ2vLx9', undefined)).to.equal(undefined);
    expect(await commonPasswords()).to.equal(common);
  });
});
