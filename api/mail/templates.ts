// The words of the box's mails: built-in templates for each kind in English (./mails-en.ts) and
// German (./mails-de.ts), which a directory (BOXAUTH_MAIL_TEMPLATES) overrides per kind and language. A template is checked when it is
// loaded, at start: one that names a placeholder its kind does not have stops the box then, not
// a mail later.
//
// The format, in the directory (docs/guides/email.md#templates-and-languages):
//   <kind>[.<language>].txt   the plain text: a first line `Subject: …`, a blank line, the body
//   <kind>[.<language>].html  the HTML body (optional: without it the mail is plain text)
// <language> is a primary subtag (`de`, `fr`); without one, the file overrides the built-in
// templates (German's too) for every language that has no file of its own.
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config.js';
import { MAIL_KINDS, PLACEHOLDERS, type MailKind } from './kinds.js';
import { GERMAN_MAILS } from './mails-de.js';
import { ENGLISH_MAILS, type MailLanguage, type Template } from './mails-en.js';
import type { MailValue } from './values.js';

export type { FactorWords, MailLanguage, Template } from './mails-en.js';
export { PLACEHOLDERS } from './kinds.js';
export { named, type MailValue, type Named } from './values.js';

/** The languages of the built-in mails by primary subtag, English first: what a mail in any other language gets. */
export const MAIL_LANGUAGES: Readonly<Record<string, MailLanguage>> = { en: ENGLISH_MAILS, de: GERMAN_MAILS };

/** The primary subtag of a mail's language (a BCP 47 tag), lower case: `de-CH` → `de`; '' for none. */
export const primarySubtag = (language: string | undefined): string => (language ?? '').split('-')[0]!.toLowerCase();

/** The built-in mails for a mail asked for in `language`: its primary subtag's, else English's. */
export function builtInMails(language: string | undefined): MailLanguage {
  const primary = primarySubtag(language);
  return Object.hasOwn(MAIL_LANGUAGES, primary) ? MAIL_LANGUAGES[primary]! : ENGLISH_MAILS;
}

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** The templates of a directory, of each kind by language ('' is the default), over the built-in ones. */
export class Templates {
  private constructor(private readonly byKind: Record<MailKind, Map<string, Template>>) {}

  /** The built-in templates, overridden by the files of `dir`; a ConfigError names the file that is wrong. */
  static load(dir?: string): Templates {
    const byKind = Object.fromEntries(MAIL_KINDS.map((kind) => [kind, new Map<string, Template>()])) as Record<
      MailKind,
      Map<string, Template>
    >;
    for (const [kind, language, template] of dir ? readDir(dir) : []) byKind[kind].set(language, template);
    for (const kind of MAIL_KINDS) {
      for (const [language, template] of byKind[kind])
        check(kind, template, `BOXAUTH_MAIL_TEMPLATES: ${kind}${language ? `.${language}` : ''}`);
      for (const [language, mails] of Object.entries(MAIL_LANGUAGES))
        check(kind, mails.templates[kind], `the built-in ${kind} template (${language})`);
    }
    return new Templates(byKind);
  }

  /**
   * The template for a mail asked for in `language` (a BCP 47 tag), by its primary subtag: the
   * directory's file of that language, else its file of none (the admin's words win over the box's),
   * else the built-in template of that language; for a language the box has no mails in, English:
   * the directory's `.en` file, else the built-in English template.
   */
  pick(kind: MailKind, language: string | undefined): Template {
    const files = this.byKind[kind];
    const primary = primarySubtag(language);
    const own = files.get(primary) ?? files.get('');
    if (own) return own;
    return Object.hasOwn(MAIL_LANGUAGES, primary)
      ? MAIL_LANGUAGES[primary]!.templates[kind]
      : (files.get('en') ?? ENGLISH_MAILS.templates[kind]);
  }
}

/**
 * What is wrong with a language of the built-in mails against English's: a part missing, or a
 * subject, text or HTML whose placeholders are not English's; the words of {{factor}} likewise.
 * Empty: the language is complete (test/unit/mail/templates.test.ts runs it over every language).
 */
export function mailLanguageProblems(mails: MailLanguage): string[] {
  const names = (source: string | undefined): string =>
    [...new Set([...(source ?? '').matchAll(PLACEHOLDER)].map((m) => m[1]!))].sort().join(', ');
  const compare = (what: string, english: string | undefined, theirs: string | undefined): string[] => {
    if (english === undefined) return theirs === undefined ? [] : [`${what} is not in English`];
    if (typeof theirs !== 'string' || !theirs.trim()) return [`${what} is missing`];
    const want = names(english);
    const got = names(theirs);
    return want === got ? [] : [`${what} has the placeholders {{${got}}}, English has {{${want}}}`];
  };
  const templates = MAIL_KINDS.flatMap((kind) => {
    const theirs = (mails.templates as Partial<Record<MailKind, Template>>)[kind];
    const english = ENGLISH_MAILS.templates[kind];
    return (['subject', 'text', 'html'] as const).flatMap((part) => compare(`${kind} ${part}`, english[part], theirs?.[part]));
  });
  const factors = Object.keys(ENGLISH_MAILS.factors).flatMap((key) =>
    compare(
      `factor word ${key}`,
      ENGLISH_MAILS.factors[key as keyof MailLanguage['factors']],
      (mails.factors as Partial<MailLanguage['factors']> | undefined)?.[key as keyof MailLanguage['factors']],
    ),
  );
  return [...templates, ...factors];
}

/**
 * A name in a mail's subject or text part, isolated by U+2068 FIRST STRONG ISOLATE … U+2069 POP
 * DIRECTIONAL ISOLATE (Unicode UAX #9, §2.7): a plain-text mail has no <bdi>, and a name holding a
 * right-to-left override (one kept before the box refused them, or an upstream provider's) or
 * written in Arabic or Hebrew would otherwise reorder the sentence around it in the mail reader.
 * The isolate resolves the name's direction on its own, and counts as one neutral character to the
 * words around it; unpaired controls inside the name end at the PDI (UAX #9 rule BD9).
 */
export const isolated = (name: string): string => `\u2068${name}\u2069`;

/** `template` with its placeholders filled: in the HTML, every value escaped; every name isolated. */
export function render(template: Template, values: Record<string, MailValue>): { subject: string; text: string; html?: string } {
  const fill = (source: string, escape: (v: string) => string, isolate: (escapedName: string) => string): string =>
    source.replace(PLACEHOLDER, (_, key: string) => {
      const value = values[key] ?? '';
      if (typeof value === 'string') return escape(value);
      const name = isolate(escape(value.name));
      return value.words === undefined ? name : escape(value.words).replace('{{name}}', () => name);
    });
  return {
    subject: fill(template.subject, (v) => v.replace(/[\r\n]+/g, ' '), isolated),
    text: fill(template.text, (v) => v, isolated),
    // HTML's own isolate: <bdi> (HTML §4.5.24).
    ...(template.html !== undefined ? { html: fill(template.html, escapeHtml, (name) => `<bdi>${name}</bdi>`) } : {}),
  };
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const FILE = /^([a-z-]+?)(?:\.([a-z]{2,3}))?\.(txt|html)$/;

function readDir(dir: string): [MailKind, string, Template][] {
  const found = new Map<string, { kind: MailKind; language: string; txt?: string; html?: string }>();
  for (const name of fs.readdirSync(dir)) {
    const full = path.join(dir, name);
    // A ConfigMap's volume holds its keys as links into a ..data directory, and that directory itself.
    if (name.startsWith('.') || !fs.statSync(full).isFile()) continue;
    const m = FILE.exec(name);
    if (!m || !(MAIL_KINDS as readonly string[]).includes(m[1]!))
      throw new ConfigError(
        `BOXAUTH_MAIL_TEMPLATES: ${name} is not <kind>[.<language>].txt or .html, with a kind of ${MAIL_KINDS.join(', ')}`,
      );
    const [, kind, language = '', format] = m as unknown as [string, MailKind, string | undefined, 'txt' | 'html'];
    const key = `${kind}.${language}`;
    const entry = found.get(key) ?? { kind, language };
    entry[format] = fs.readFileSync(full, 'utf8');
    found.set(key, entry);
  }
  return [...found.values()].map(({ kind, language, txt, html }) => {
    const name = `${kind}${language ? `.${language}` : ''}`;
    if (txt === undefined)
      throw new ConfigError(`BOXAUTH_MAIL_TEMPLATES: ${name}.html needs ${name}.txt beside it (the text, and the subject)`);
    const subject = /^Subject:[ \t]*(.*?)\r?\n\r?\n/.exec(txt);
    if (!subject?.[1]) throw new ConfigError(`BOXAUTH_MAIL_TEMPLATES: ${name}.txt must begin with a line "Subject: …", then a blank line`);
    return [kind, language, { subject: subject[1], text: txt.slice(subject[0].length), ...(html !== undefined ? { html } : {}) }];
  });
}

function check(kind: MailKind, template: Template, what: string): void {
  const allowed = PLACEHOLDERS[kind];
  for (const [part, source] of Object.entries(template)) {
    for (const [, name] of (source as string).matchAll(PLACEHOLDER)) {
      if (!allowed.includes(name!)) {
        const where = `${what} (${part})`;
        throw new ConfigError(
          `${where} names {{${name}}}, which a ${kind} mail does not have: it may name ${allowed.map((p) => `{{${p}}}`).join(', ')}`,
        );
      }
    }
  }
}
