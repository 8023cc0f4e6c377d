import { expect } from 'chai';
import { isEmailAddress } from '../../../api/schema/people.js';
import { addressNeverProven, EMAIL_ADDRESS_PATTERN } from '../../../api/store/users.js';

describe('addressNeverProven: whom a directory does not see', function () {
  it('an address no link proved and nobody vouched for; not a name that is no address, nor a proven address', function () {
    const person = (email: string, emailVerified: boolean, mustVerifyEmail = false) => ({ email, emailVerified, mustVerifyEmail });
    expect(addressNeverProven(person('nEw.HiRe@corp.example', false))).to.equal(true);
    expect(addressNeverProven(person('new.hire@corp.example', true, true))).to.equal(true);
    expect(addressNeverProven(person('new.hire@corp.example', true))).to.equal(false);
    expect(addressNeverProven(person('new.hire', false))).to.equal(false);
  });

  it('its SQL pattern reads as isEmailAddress does, whitespace of every kind included', function () {
    // The pattern's escapes (\t, \uXXXX) mean the same in JavaScript and PostgreSQL regular expressions.
    const pattern = new RegExp(EMAIL_ADDRESS_PATTERN);
    for (let code = 0; code <= 0xffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const c = String.fromCharCode(code);
      for (const value of [`a${c}b@corp.example`, `ab@corp${c}example`, `${c}@x`]) {
        if (pattern.test(value) !== isEmailAddress(value)) expect.fail(`U+${code.toString(16)} in ${JSON.stringify(value)}`);
      }
    }
  });
});
