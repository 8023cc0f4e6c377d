// Look-alike addresses (issue 63): `аdmin@localhost` with a Cyrillic а is another mailbox than the
// admin's, drawn the same in the console, the audit trail and every app's `email` claim. emailKey
// (api/input.ts) folds what Unicode calls the same letter (fullwidth, the Kelvin sign, case); a
// letter of another script that only looks the same is refused instead, by the restriction level
// of Unicode Technical Standard #39 (Unicode Security Mechanisms), §5.2 "Highly Restrictive",
// applied to each part of an address that is read as one word: the local part, and each label of
// the domain (as IDNA reads domains, RFC 5890 §2.3.2.1). A real address in one script —
// `пример@пример.рф`, `user@例え.jp`, `θεός@παράδειγμα.ελ` — passes; `аdmin`, `pаypal.com` do not.
//
// Scripts come from the engine's Unicode data (Script_Extensions, `\p{scx=…}`): no table is kept
// here. What this does not catch is a whole-script confusable, a word written entirely in another
// script that looks Latin (`сосо`, all Cyrillic); UTS #39's skeletons catch that from its
// confusables.txt data, which no maintained npm package keeps current (docs/concepts/users-and-groups.md).

/**
 * The scripts of Unicode 17 by their ISO 15924 codes (UAX #24). A code the engine's Unicode does
 * not know (an older Node) is skipped: a character of that script then counts as Unknown, a script
 * of its own that mixes with none.
 */
const SCRIPT_CODES = (
  'Adlm Aghb Ahom Arab Armi Armn Avst Bali Bamu Bass Batk Beng Berf Bhks Bopo Brah Brai Bugi Buhd Cakm Cans Cari Cham Cher ' +
  'Chrs Copt Cpmn Cprt Cyrl Deva Diak Dogr Dsrt Dupl Egyp Elba Elym Ethi Gara Geor Glag Gong Gonm Goth Gran Grek Gujr Gukh ' +
  'Guru Hang Hani Hano Hatr Hebr Hira Hluw Hmng Hmnp Hung Ital Java Kali Kana Kawi Khar Khmr Khoj Kits Knda Krai Kthi Lana ' +
  'Laoo Latn Lepc Limb Lina Linb Lisu Lyci Lydi Mahj Maka Mand Mani Marc Medf Mend Merc Mero Mlym Modi Mong Mroo Mtei Mult ' +
  'Mymr Nagm Nand Narb Nbat Newa Nkoo Nshu Ogam Olck Onao Orkh Orya Osge Osma Ougr Palm Pauc Perm Phag Phli Phlp Phnx Plrd ' +
  'Prti Rjng Rohg Runr Samr Sarb Saur Sgnw Shaw Shrd Sidd Sidt Sind Sinh Sogd Sogo Sora Soyo Sund Sunu Sylo Syrc Tagb Takr ' +
  'Tale Talu Taml Tang Tavt Tayo Telu Tfng Tglg Thaa Thai Tibt Tirh Tnsa Todr Tols Toto Tutg Ugar Vaii Vith Wara Wcho Xpeo ' +
  'Xsux Yezi Yiii Zanb'
).split(' ');

/** Each known script with the pattern of its characters (Script_Extensions: a character used in several scripts is in each). */
const SCRIPTS: readonly { code: string; pattern: RegExp }[] = SCRIPT_CODES.flatMap((code) => {
  try {
    return [{ code, pattern: new RegExp(`^\\p{scx=${code}}$`, 'u') }];
  } catch {
    return [];
  }
});

const UNASSIGNED = /^\p{Script=Unknown}$/u;

/**
 * UTS #39 §5.1's augmented script sets: a Han character is also of the writing systems that use
 * it (Jpan, Kore, Hanb), kana of Japanese, Hangul of Korean, Bopomofo of Han with Bopomofo; so
 * `例え` (Han and Hiragana) is one script, Japanese.
 */
const AUGMENTED: Readonly<Record<string, readonly string[]>> = {
  Hani: ['Hanb', 'Jpan', 'Kore'],
  Hira: ['Jpan'],
  Kana: ['Jpan'],
  Hang: ['Kore'],
  Bopo: ['Hanb'],
};

/**
 * The augmented script set of `ch`, or undefined for a character of every script (Common,
 * Inherited: digits, punctuation, combining marks), which UTS #39 leaves out of the resolution.
 */
function scriptsOf(ch: string): Set<string> | undefined {
  const found = new Set<string>();
  for (const { code, pattern } of SCRIPTS) {
    if (!pattern.test(ch)) continue;
    found.add(code);
    for (const more of AUGMENTED[code] ?? []) found.add(more);
  }
  if (found.size) return found;
  return UNASSIGNED.test(ch) ? new Set(['Zzzz']) : undefined;
}

/** UTS #39 §5.2: besides one script, Latin with these alone is "Highly Restrictive" (Japanese, Chinese with Bopomofo, Korean). */
const WITH_LATIN = ['Jpan', 'Hanb', 'Kore'];

/**
 * The scripts `word` mixes beyond UTS #39's "Highly Restrictive" level, in the order they appear
 * (one script each, by its first code); empty when it does not: ASCII, one script (its resolved
 * script set is not empty, §5.1), or Latin with Japanese, Chinese or Korean.
 */
export function mixedScripts(word: string): string[] {
  // ASCII is Latin and Common alone (UTS #39 §5.2's first case), as nearly every address is.
  if (/^[\x00-\x7f]*$/.test(word)) return [];
  const sets: Set<string>[] = [];
  for (const ch of word) {
    const set = scriptsOf(ch);
    if (set) sets.push(set);
  }
  const resolved = sets.reduce<Set<string> | undefined>((all, set) => (all ? new Set([...all].filter((s) => set.has(s))) : set), undefined);
  if (resolved === undefined || resolved.size > 0) return [];
  if (WITH_LATIN.some((other) => sets.every((set) => set.has('Latn') || set.has(other)))) return [];
  return [...new Set(sets.map((set) => set.values().next().value!))];
}

const names = new Intl.DisplayNames(['en'], { type: 'script' });

/**
 * What is wrong with `address` (an email, or a sign-in name without "@") for the scripts it
 * mixes: a part read as one word — the local part, or a label of the domain — that mixes scripts
 * beyond UTS #39's "Highly Restrictive" level. Undefined: each part is in one script.
 */
export function mixedScriptProblem(address: string): string | undefined {
  const at = address.lastIndexOf('@');
  const parts = at < 0 ? [address] : [address.slice(0, at), ...address.slice(at + 1).split('.')];
  for (const part of parts) {
    const mixed = mixedScripts(part);
    if (mixed.length) {
      const said = mixed.map((code) => names.of(code) ?? code).join(', ');
      return `mixes scripts (${said}) in one part: write each part of an address (before the @, and each label of the domain) in one script`;
    }
  }
  return undefined;
}
