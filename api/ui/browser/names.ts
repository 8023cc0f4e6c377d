// The names a third party chose, in the admin console's sentences (issue 63, item 7): a person's
// address, a group's, a client's, an App's, a policy's, an identity provider's, a passkey's. The
// console's side of api/ui/html.ts's chosen(), which the box's pages use: this module runs in the
// browser and may import nothing of the server's. Pure (no DOM): console.ts turns words into nodes.

/**
 * A name someone else chose. Shown isolated (HTML's <bdi>; in plain text UAX #9's first-strong
 * isolate, U+2068 … U+2069): its direction is its own and changes nothing around it. Unisolated, a
 * name holding U+202E (RIGHT-TO-LEFT OVERRIDE) — one kept before the doors refused it, or one an
 * upstream provider or directory sent — draws the rest of the sentence right to left; a name in
 * Arabic or Hebrew, which the doors accept, moves the words beside it.
 */
export class Chosen {
  constructor(readonly name: string) {}
}

export const chosen = (name: string): Chosen => new Chosen(name);

/** A sentence: text, and the names in it. */
export type Words = (string | Chosen)[];

/** Text, a name alone, or a sentence of both. */
export type Sentence = string | Chosen | Words;

/** A sentence's parts. */
export const partsOf = (sentence: Sentence): Words => (Array.isArray(sentence) ? sentence : [sentence]);

/** A sentence of `strings` around `values`: a value that is Chosen stays a name, any other is text. */
export function words(strings: TemplateStringsArray, ...values: unknown[]): Words {
  const out: Words = [];
  strings.forEach((text, i) => {
    if (text) out.push(text);
    if (i < values.length) {
      const value = values[i];
      if (value instanceof Chosen) out.push(value);
      else if (Array.isArray(value)) out.push(...(value as Words));
      else out.push(String(value ?? ''));
    }
  });
  return out;
}

/** U+2068 FIRST STRONG ISOLATE and U+2069 POP DIRECTIONAL ISOLATE (UAX #9 §2.7). */
export const FSI = '\u2068';
export const PDI = '\u2069';

/**
 * The sentence as plain text, for what holds no markup (a confirm() dialog, a title): each name
 * between FSI and PDI, which isolate it as <bdi> does (UAX #9: an isolate's content is resolved on
 * its own, and the isolate counts as one neutral character to the text around it).
 */
export const plainText = (sentence: Sentence): string =>
  partsOf(sentence)
    .map((part) => (part instanceof Chosen ? `${FSI}${part.name}${PDI}` : part))
    .join('');

/** The sentence as it reads, no isolates: what a filter matches against. */
export const readText = (sentence: Sentence): string =>
  partsOf(sentence)
    .map((part) => (part instanceof Chosen ? part.name : part))
    .join('');
