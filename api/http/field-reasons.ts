// The reasons the schema gives for a form field (api/schema/people.ts, password-policy.ts,
// api/input.ts) are English sentences: what the API's 422 bodies say to programs. A page says
// them in the person's language: each reason the people's forms can meet is read here into words
// of the catalogue whose English is the very same sentence (test/unit/http/field-reasons.test.ts
// checks both); a reason not listed is shown as written.
import { shown, words, type FieldErrors, type Text } from '../ui/language.js';

const CONTEXT = {
  'the email address': 'password.likeEmail',
  'the user name': 'password.likeUserName',
  "the box's name": 'password.likeBox',
  'the name of this service': 'password.likeService',
} as const;

const REASONS: readonly (readonly [RegExp, (m: RegExpExecArray) => Text])[] = [
  [/^is required$/, () => words('reason.required')],
  [/^must be a string$/, () => words('reason.mustBeString')],
  [/^is not a valid email address$/, () => words('reason.notEmail')],
  [/^must be at most (\d+) characters$/, (m) => words('reason.atMost', { max: Number(m[1]) })],
  [/^holds a control or invisible character \((U\+[0-9A-F]{4,6})\)$/, (m) => words('reason.invisible', { code: m[1]! })],
  [/^is longer than (\d+) characters$/, (m) => words('reason.longerThan', { max: Number(m[1]) })],
  [
    /^mixes scripts \((.+)\) in one part: write each part of an address \(before the @, and each label of the domain\) in one script$/,
    (m) => words('reason.mixedScripts', { scripts: m[1]! }),
  ],
  [/^is not well-formed Unicode \(a lone surrogate\)$/, () => words('reason.notUnicode')],
  [/^is too long: at most (\d+) characters$/, (m) => words('password.tooLong', { max: Number(m[1]) })],
  [/^is too short: at least (\d+) characters$/, (m) => words('password.tooShort', { min: Number(m[1]) })],
  [/^is one of the most used passwords: choose another$/, () => words('password.common')],
  [
    /^is too much like (.+): choose another$/,
    (m) => (Object.hasOwn(CONTEXT, m[1]!) ? words(CONTEXT[m[1] as keyof typeof CONTEXT]) : shown(m[0])),
  ],
  [/^is repeated or sequential characters \(such as aaaaaaaa, 12341234 or abcd1234\): choose another$/, () => words('password.repetitive')],
];

/** A reason the schema gave, as words of the catalogue where it is one the box knows, else as written. */
export function fieldReason(reason: string): Text {
  for (const [pattern, say] of REASONS) {
    const m = pattern.exec(reason);
    if (m) return say(m);
  }
  return shown(reason);
}

/** A ValidationError's reasons by field, as a page is told them. */
export const pageErrors = (errors: Readonly<Record<string, readonly string[]>>): FieldErrors =>
  Object.fromEntries(Object.entries(errors).map(([field, reasons]) => [field, reasons.map(fieldReason)]));
