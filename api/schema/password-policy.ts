// The rule a new password must meet, as NIST SP 800-63B §5.1.1.2 asks of memorized secrets.
// "Memorized secrets SHALL be at least 8 characters in length" (a box may ask more) and
// "verifiers SHOULD permit ... at least 64 characters" (the box takes 1024); "each Unicode code
// point SHALL be counted as a single character". "When processing requests to establish and change
// memorized secrets, verifiers SHALL compare the prospective secrets against a list that contains
// values known to be commonly-used, expected, or compromised", such as "dictionary words",
// "repetitive or sequential characters (e.g. 'aaaaaa', '1234abcd')" and "context-specific words,
// such as the name of the service, the username, and derivatives thereof"; and then "SHALL advise
// the subscriber that they need to select a different secret, SHALL provide the reason for
// rejection": each refusal below says why, and never repeats the password. And no more: "verifiers
// SHOULD NOT impose other composition rules (e.g., requiring mixtures of different character types
// or prohibiting consecutively repeated characters)" — a password is refused for being repeated or
// sequential characters as a whole, never for holding some — and "SHOULD NOT require memorized
// secrets to be changed arbitrarily (e.g., periodically)".
//
// The decision is pure (`passwordProblem`): the rule's parameters and the list are given to it.
// The list is @zxcvbn-ts/language-common's 49,000 most used passwords, shipped with the box (no
// network), read at the first password set (`commonPasswords`), not at every start.
import type { Config } from '../config.js';

/** The most characters a password may have: long passphrases fit, a body cannot make argon2 hash a megabyte. */
export const PASSWORD_MAX = 1024;

/** A word a password must not be made of, and how a refusal names it. */
export interface ContextWord {
  word: string;
  /** As a refusal says it: "is too much like <what>". */
  what: string;
}

export interface PasswordRule {
  /** The fewest characters (Unicode code points, after NFC normalization, as NIST SP 800-63B §5.1.1.2 counts them). */
  minLength: number;
  context: readonly ContextWord[];
}

/** The most used passwords, NFC-normalized and in lower case. */
export type CommonPasswords = ReadonlySet<string>;

/** How a password is compared: NFC (RFC 7644 §7.8, RFC 8265's OpaqueString) and in lower case, so `PASSWORD` is `password`. */
const folded = (s: string): string => s.normalize('NFC').toLowerCase();

const codePoints = (s: string): number[] => Array.from(s, (c) => c.codePointAt(0)!);

/**
 * The words of a person's context: their email address (or the name a directory gave them), its
 * local part and the pieces of that (`ann.lee` is `ann` and `lee`), the box's name (and its
 * namespace, in a cluster) and the service's own name. Pieces shorter than 3 characters are no words.
 */
export function contextWords(box: string, signInName: string | undefined): ContextWord[] {
  const words: ContextWord[] = [];
  const add = (word: string, what: string): void => {
    const w = folded(word.trim());
    if ([...w].length >= 3 && !words.some((c) => c.word === w)) words.push({ word: w, what });
  };
  if (signInName) {
    const what = signInName.includes('@') ? 'the email address' : 'the user name';
    const local = signInName.includes('@') ? signInName.slice(0, signInName.lastIndexOf('@')) : signInName;
    add(signInName, what);
    add(local, what);
    for (const piece of local.split(/[^\p{L}\p{N}]+/u)) add(piece, what);
  }
  for (const piece of box.split('/')) add(piece, "the box's name");
  add('boxauth', 'the name of this service');
  return words;
}

/**
 * Whether the password is made of repeated or sequential characters: a piece shorter than the
 * minimum, repeated (`abcabcabc`, `12341234`); or at most two runs, each of one character repeated or of
 * neighbouring characters in order (`aaaaaaaa`, `12345678`, `1234abcd`, `zyxw9876`).
 */
function isRepetitiveOrSequential(password: string, minLength: number): boolean {
  const cps = codePoints(password);
  for (let period = 1; period < minLength && period < cps.length; period++) {
    if (cps.length % period === 0 && cps.every((c, i) => c === cps[i % period])) return true;
  }
  let runs = 0;
  let i = 0;
  while (i < cps.length) {
    runs++;
    const step = i + 1 < cps.length ? cps[i + 1]! - cps[i]! : 0;
    i++;
    if (Math.abs(step) <= 1) while (i < cps.length && cps[i]! - cps[i - 1]! === step) i++;
  }
  return runs <= 2;
}

/**
 * The context word a password is too much like: what is left of it without the words of its
 * context is shorter than the minimum (`ann.lee2024!` for ann.lee@example.com, `boxauth-admin`).
 */
function likeContext(password: string, rule: PasswordRule): ContextWord | undefined {
  let rest = password;
  let first: ContextWord | undefined;
  // Longest first: the whole address goes before its local part, the local part before its pieces.
  for (const c of [...rule.context].sort((a, b) => b.word.length - a.word.length)) {
    if (!rest.includes(c.word)) continue;
    first ??= c;
    rest = rest.split(c.word).join('');
  }
  return first && codePoints(rest).length < rule.minLength ? first : undefined;
}

/** One of the most used passwords, also with spaces and punctuation added (`pass word`, `password-1` are `password1`). */
function isCommon(password: string, common: CommonPasswords): boolean {
  return common.has(password) || common.has(password.replace(/[^\p{L}\p{N}]+/gu, ''));
}

/**
 * What is wrong with a new password under this rule, as a sentence to show after the field's name
 * ("is too short: …"), or undefined when it may be set. One reason, the first of: its length, the
 * list of the most used passwords, its context, repeated or sequential characters.
 */
export function passwordProblem(password: string, rule: PasswordRule, common: CommonPasswords): string | undefined {
  if (password.length > PASSWORD_MAX) return `is too long: at most ${PASSWORD_MAX} characters`;
  if (codePoints(password.normalize('NFC')).length < rule.minLength) return `is too short: at least ${rule.minLength} characters`;
  const p = folded(password);
  if (isCommon(p, common)) return 'is one of the most used passwords: choose another';
  const like = likeContext(p, rule);
  if (like) return `is too much like ${like.what}: choose another`;
  if (isRepetitiveOrSequential(p, rule.minLength))
    return 'is repeated or sequential characters (such as aaaaaaaa, 12341234 or abcd1234): choose another';
  return undefined;
}

let loading: Promise<CommonPasswords> | undefined;

/** The list of the most used passwords, loaded once per process, at its first use: a box's start does not pay for it. */
export function commonPasswords(): Promise<CommonPasswords> {
  loading ??= import('@zxcvbn-ts/language-common').then(
    ({ dictionary }) => new Set(dictionary['passwords-common'].map(folded)),
    (err: unknown) => {
      loading = undefined; // tried again at the next password rather than refusing every one for the process's life
      throw err;
    },
  );
  return loading;
}

/** The box's rule for a person's new password (BOXAUTH_PASSWORD_MIN_LENGTH, the context of their sign-in name). */
export function boxPasswordRule(config: Pick<Config, 'passwordMinLength' | 'box'>, signInName: string | undefined): PasswordRule {
  return { minLength: config.passwordMinLength, context: contextWords(config.box, signInName) };
}

/** What is wrong with a person's new password on a box, or undefined; asked once the list is loaded. */
export type PasswordCheck = (password: string, signInName: string | undefined) => string | undefined;

/** The box's check of new passwords (the list is loaded at the first call). */
export async function passwordCheck(config: Pick<Config, 'passwordMinLength' | 'box'>): Promise<PasswordCheck> {
  const common = await commonPasswords();
  return (password, signInName) => passwordProblem(password, boxPasswordRule(config, signInName), common);
}
