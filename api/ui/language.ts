// The languages of the pages (docs/guides/branding-and-languages.md): each a catalogue of every
// string a page shows (./messages/), picked per request by its Accept-Language header, English
// when none it asks for is here. A catalogue's strings are text, never HTML: a placeholder
// `{name}` takes a value (escaped, unless it is already Html), so that a translation cannot
// break a page.
import { escape, Html } from './html.js';
import { de } from '../messages/de.js';
import { en, type Catalogue, type MessageKey } from '../messages/en.js';

export type { Catalogue, MessageKey } from '../messages/en.js';

export interface Language {
  /** Its BCP 47 tag, as <html lang> says it. */
  tag: string;
  /** Its name in itself. */
  name: string;
  /** Its writing direction, as <html dir> says it. */
  dir: 'ltr' | 'rtl';
  messages: Catalogue;
}

/** The languages the box ships, English first: what a request that asks for none of them gets. */
export const LANGUAGES: readonly Language[] = [
  { tag: 'en', name: 'English', dir: 'ltr', messages: en },
  { tag: 'de', name: 'Deutsch', dir: 'ltr', messages: de },
];

export const ENGLISH: Language = LANGUAGES[0]!;

/** One language range of an Accept-Language header (RFC 9110 §12.5.4), with its weight. */
export interface LanguageRange {
  range: string;
  q: number;
}

/** The ranges of an Accept-Language header, most wanted first (ties in the header's order); what cannot be read is left out. */
export function languageRanges(header: string | undefined): LanguageRange[] {
  if (!header) return [];
  return header
    .split(',')
    .slice(0, 32)
    .flatMap((part) => {
      const [range = '', ...params] = part.trim().split(';');
      if (!/^(\*|[a-zA-Z]{1,8}(-[a-zA-Z0-9]{1,8})*)$/.test(range.trim())) return [];
      const qParam = params.map((p) => p.trim()).find((p) => /^q=/i.test(p));
      // RFC 9110 §12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
      if (qParam !== undefined && !/^q=(0(\.\d{0,3})?|1(\.0{0,3})?)$/i.test(qParam)) return [];
      return [{ range: range.trim().toLowerCase(), q: qParam === undefined ? 1 : Number(qParam.slice(2)) }];
    })
    .map((r, i) => ({ ...r, i }))
    .sort((a, b) => b.q - a.q || a.i - b.i)
    .map(({ range, q }) => ({ range, q }));
}

/**
 * The language for a request: RFC 4647 §3.4's lookup over the ranges it accepts (q > 0), most
 * wanted first — a range names a language of the box, or does once its last subtags are cut off
 * (de-CH → de) — and English when none does. `*` is any language: English.
 */
export function pickLanguage(header: string | undefined, languages: readonly Language[] = LANGUAGES): Language {
  for (const { range, q } of languageRanges(header)) {
    if (q === 0) continue;
    if (range === '*') return languages[0] ?? ENGLISH;
    for (let tag = range; tag; tag = tag.includes('-') ? tag.slice(0, tag.lastIndexOf('-')) : '') {
      const found = languages.find((l) => l.tag.toLowerCase() === tag);
      if (found) return found;
    }
  }
  return languages[0] ?? ENGLISH;
}

/** What a placeholder may take: text (escaped), Html (as it is), or another sentence of the page (said in its language). */
export type Values = Record<string, string | number | Html | Text>;

/** A catalogue's string with its placeholders filled. */
export type Say = (key: MessageKey, values?: Values) => Html;

/** The placeholders a catalogue string holds, e.g. ["email", "minutes"]. */
export function placeholders(text: string): string[] {
  return [...text.matchAll(/\{([a-zA-Z][a-zA-Z0-9]*)\}/g)].map((m) => m[1]!).sort();
}

/**
 * What is wrong with a catalogue against English's: a key missing, a key English has not, a
 * string whose placeholders are not English's. Empty: the catalogue is complete
 * (test/unit/ui/messages.test.ts runs it over every language the box ships).
 */
export function catalogueProblems(messages: Readonly<Record<string, unknown>>): string[] {
  const missing = Object.keys(en)
    .filter((key) => !Object.hasOwn(messages, key))
    .map((key) => `missing key ${key}`);
  const extra = Object.keys(messages)
    .filter((key) => !Object.hasOwn(en, key))
    .map((key) => `extra key ${key}`);
  const mismatched = Object.entries(messages).flatMap(([key, text]) => {
    if (!Object.hasOwn(en, key)) return [];
    if (typeof text !== 'string' || !text.trim()) return [`${key} is empty`];
    const want = placeholders(en[key as MessageKey]).join(', ');
    const got = placeholders(text).join(', ');
    return want === got ? [] : [`${key} has the placeholders {${got}}, English has {${want}}`];
  });
  return [...missing, ...extra, ...mismatched];
}

/**
 * A catalogue's own text, escaped for the pages: every page writes its attributes in double quotes,
 * so an apostrophe (the box's, l'application) stays as written, as the pages wrote it before.
 */
const escapeText = (text: string): string => text.replace(/[&<>"]/g, (c) => escape(c));

/** `say` for a language: its string, English's where it lacks one, the text escaped and each value put in. */
export function sayer(language: Language): Say {
  const say: Say = (key, values = {}) => {
    const text = Object.hasOwn(language.messages, key) ? language.messages[key] : en[key];
    return new Html(
      text
        .split(/(\{[a-zA-Z][a-zA-Z0-9]*\})/)
        .map((part) => {
          const name = /^\{([a-zA-Z][a-zA-Z0-9]*)\}$/.exec(part)?.[1];
          if (name === undefined || !Object.hasOwn(values, name)) return escapeText(part);
          const value = values[name]!;
          if (value instanceof Html) return value.text;
          if (typeof value !== 'object') return escape(value);
          const said = textOf(say, value);
          return said instanceof Html ? said.text : escape(said);
        })
        .join(''),
    );
  };
  return say;
}

/**
 * Text a page is told to show: words of the catalogue, or something shown as it is that is no
 * sentence of the box's (a third party's words, data) — `shown(...)` says so where it is made, so
 * that an English sentence cannot reach a page of another language as a plain string.
 */
export type Text = { key: MessageKey; values?: Values } | { shown: string };

/** Words that are not the box's own (a third party's reason, data), shown as written in every language. */
export const shown = (text: string): Text => ({ shown: text });

/** Words of the catalogue, for a page to say in the person's language. */
export const words = (key: MessageKey, values?: Values): Text => ({ key, ...(values ? { values } : {}) });

export const textOf = (say: Say, text: Text): Html | string => ('shown' in text ? text.shown : say(text.key, text.values));

/** What is wrong with each field of a form, as a page is told it: words of the catalogue, or reasons shown as written. */
export type FieldErrors = Record<string, readonly Text[]>;

/** A form's errors said in the page's language. */
export const saidErrors = (say: Say, errors: FieldErrors = {}): Record<string, (Html | string)[]> =>
  Object.fromEntries(Object.entries(errors).map(([f, texts]) => [f, texts.map((t) => textOf(say, t))]));
