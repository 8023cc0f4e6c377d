// The reasons of a form field's check, said on a page in the person's language: every reason the
// schema gives for the people's forms is read into words of the catalogue whose English is that
// very reason, so that an English page reads as before and the API's bodies keep their words.
import { expect } from 'chai';
import { fieldReason, pageErrors } from '../../../api/http/field-reasons.js';
import { textProblem } from '../../../api/input.js';
import { ENGLISH, LANGUAGES, sayer } from '../../../api/ui/language.js';
import { contextWords, passwordProblem, PASSWORD_MAX, type PasswordRule } from '../../../api/schema/password-policy.js';
import { emailProblem } from '../../../api/schema/people.js';

const rule = (signInName: string): PasswordRule => ({ minLength: 12, context: contextWords('acme/main', signInName) });
const common = new Set(['password1234']);
const german = LANGUAGES.find((l) => l.tag === 'de')!;

/** Every reason the schema gives for a new password, an email, or a text field of a page's form. */
const REASONS: string[] = [
  passwordProblem('x'.repeat(PASSWORD_MAX + 1), rule('ann@example.com'), common)!,
  passwordProblem('short', rule('ann@example.com'), common)!,
  passwordProblem('Password1234', rule('ann@example.com'), common)!,
  passwordProblem('ann.lee2024!', rule('ann.lee@example.com'), common)!,
  passwordProblem('ann.lee2024!', rule('ann.lee'), common)!,
  passwordProblem('acme-main-12', rule('zed@example.com'), common)!,
  passwordProblem('boxauth-admin', rule('zed@example.com'), common)!,
  passwordProblem('abcdefgh12345678', rule('zed@example.com'), common)!,
  emailProblem('not an address')!,
  emailProblem(`${'a'.repeat(400)}@example.com`)!,
  emailProblem('ann\u200b@example.com')!,
  emailProblem('\u0430dmin@localhost')!,
  textProblem('x'.repeat(11), 10)!,
  textProblem('\ud800', 10)!,
  'is required',
  'must be a string',
];

describe('the reasons of a form field, on a page', function () {
  it('reads every reason of the schema into words of the catalogue whose English is the reason itself', function () {
    expect(REASONS.every((r) => typeof r === 'string')).to.equal(true);
    expect(new Set(REASONS).size, 'each case gives its own reason').to.equal(REASONS.length);
    for (const reason of REASONS) {
      const text = fieldReason(reason);
      expect(text, reason).to.be.an('object');
      if ('shown' in text) continue;
      expect(sayer(ENGLISH)(text.key, text.values).text, reason).to.equal(reason.replace(/&/g, '&amp;').replace(/</g, '&lt;'));
    }
  });

  it('says them in German, numbers and character names kept', function () {
    const say = sayer(german);
    const said = (reason: string): string => {
      const t = fieldReason(reason);
      return 'shown' in t ? t.shown : say(t.key, t.values).text;
    };
    expect(said('is too short: at least 12 characters')).to.equal('ist zu kurz: mindestens 12 Zeichen');
    expect(said("is too much like the box's name: choose another")).to.equal('ähnelt zu sehr dem Namen der Box: Wählen Sie ein anderes');
    expect(said('holds a control or invisible character (U+200B)')).to.equal('enthält ein Steuer- oder unsichtbares Zeichen (U+200B)');
  });

  it('shows a reason it does not know as written, and reads a whole form', function () {
    expect(fieldReason('is too much like the moon: choose another')).to.deep.equal({ shown: 'is too much like the moon: choose another' });
    expect(fieldReason('is not a known field')).to.deep.equal({ shown: 'is not a known field' });
    expect(pageErrors({ email: ['is required'], password: ['is too short: at least 8 characters', 'odd'] })).to.deep.equal({
      email: [{ key: 'reason.required' }],
      password: [{ key: 'password.tooShort', values: { min: 8 } }, { shown: 'odd' }],
    });
  });
});
