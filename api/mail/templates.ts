// The words of the box's mails: built-in English templates for each kind, which a directory
// (BOXAUTH_MAIL_TEMPLATES) overrides per kind and language. A template is checked when it is
// loaded, at start: one that names a placeholder its kind does not have stops the box then, not
// a mail later.
//
// The format, in the directory (docs/guides/email.md#templates-and-languages):
//   <kind>[.<language>].txt   the plain text: a first line `Subject: …`, a blank line, the body
//   <kind>[.<language>].html  the HTML body (optional: without it the mail is plain text)
// <language> is a primary subtag (`de`, `fr`); without one, the file overrides the built-in
// English template for every language that has none of its own.
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config.js';
import { MAIL_KINDS, type MailKind } from '../store/mail-outbox.js';

export interface Template {
  subject: string;
  text: string;
  html?: string;
}

/** The values a kind's template may name, as {{name}} ({{supportLink}}: the branding's support link, or empty). */
export const PLACEHOLDERS: Record<MailKind, readonly string[]> = {
  'password-reset': ['box', 'email', 'link', 'minutes', 'supportLink'],
  'verify-email': ['box', 'email', 'link', 'hours', 'supportLink'],
  'already-registered': ['box', 'email', 'signInLink', 'resetLink', 'supportLink'],
  'email-changed': ['box', 'email', 'newEmail', 'supportLink'],
  'confirm-email-change': ['box', 'email', 'oldEmail', 'link', 'hours', 'supportLink'],
  'factor-added': ['box', 'email', 'factor', 'accountLink', 'supportLink'],
  'factor-removed': ['box', 'email', 'factor', 'accountLink', 'supportLink'],
  'password-changed': ['box', 'email', 'resetLink', 'supportLink'],
};

const BUILT_IN: Record<MailKind, Template> = {
  'password-reset': {
    subject: 'Reset your password on {{box}}',
    text: `Someone, hopefully you, asked to reset the password of {{email}} on {{box}}.

Choose a new password here (the link works once, for {{minutes}} minutes):

{{link}}

If you did not ask for it, ignore this mail: your password stays as it is.
`,
    html: `<p>Someone, hopefully you, asked to reset the password of {{email}} on {{box}}.</p>
<p><a href="{{link}}">Choose a new password</a> (the link works once, for {{minutes}} minutes).</p>
<p>If you did not ask for it, ignore this mail: your password stays as it is.</p>
`,
  },
  'verify-email': {
    subject: 'Confirm your email address on {{box}}',
    text: `Confirm that {{email}} is your address on {{box}} by opening this link (it works for {{hours}} hours):

{{link}}

If you did not sign up or change your address on {{box}}, ignore this mail.
`,
    html: `<p>Confirm that {{email}} is your address on {{box}}:</p>
<p><a href="{{link}}">Confirm my address</a> (the link works for {{hours}} hours).</p>
<p>If you did not sign up or change your address on {{box}}, ignore this mail.</p>
`,
  },
  'already-registered': {
    subject: 'Your account on {{box}}',
    text: `Someone tried to sign up on {{box}} with {{email}}, which already has an account.

If it was you, sign in: {{signInLink}}
Forgot your password? Reset it: {{resetLink}}

If it was not you, ignore this mail: nothing changed.
`,
    html: `<p>Someone tried to sign up on {{box}} with {{email}}, which already has an account.</p>
<p>If it was you, <a href="{{signInLink}}">sign in</a>. Forgot your password? <a href="{{resetLink}}">Reset it</a>.</p>
<p>If it was not you, ignore this mail: nothing changed.</p>
`,
  },
  'confirm-email-change': {
    subject: 'Confirm your new email address on {{box}}',
    text: `The account of {{oldEmail}} on {{box}} asks to use {{email}} from now on.

If it is you, confirm it here (the link works for {{hours}} hours); the account's password is asked:

{{link}}

If you did not ask for it, ignore this mail: nothing changes.
`,
    html: `<p>The account of {{oldEmail}} on {{box}} asks to use {{email}} from now on.</p>
<p>If it is you, <a href="{{link}}">confirm it</a> (the link works for {{hours}} hours); the account's password is asked.</p>
<p>If you did not ask for it, ignore this mail: nothing changes.</p>
`,
  },
  'email-changed': {
    subject: 'Your address on {{box}} was changed',
    text: `The address of your account on {{box}} was changed from {{email}} to {{newEmail}}.

If you changed it, there is nothing to do. If you did not, someone else may be using your
account: tell the administrator of {{box}} at once.
`,
    html: `<p>The address of your account on {{box}} was changed from {{email}} to {{newEmail}}.</p>
<p>If you changed it, there is nothing to do. If you did not, someone else may be using your account: tell the administrator of {{box}} at once.</p>
`,
  },
  'factor-added': {
    subject: 'A way to sign in was added to your account on {{box}}',
    text: `On {{box}}, {{factor}} was added to the account of {{email}}.

If you added it, there is nothing to do. If you did not, someone else may be using your account:
remove it on your account page ({{accountLink}}), change your password there, and tell the
administrator of {{box}}.
`,
    html: `<p>On {{box}}, {{factor}} was added to the account of {{email}}.</p>
<p>If you added it, there is nothing to do. If you did not, someone else may be using your account: remove it on <a href="{{accountLink}}">your account page</a>, change your password there, and tell the administrator of {{box}}.</p>
`,
  },

  'factor-removed': {
    subject: 'A way to sign in was removed from your account on {{box}}',
    text: `On {{box}}, {{factor}} was removed from the account of {{email}}.

If you removed it, there is nothing to do. If you did not, someone else may be using your account:
check your account page ({{accountLink}}) and tell the administrator of {{box}}.
`,
    html: `<p>On {{box}}, {{factor}} was removed from the account of {{email}}.</p>
<p>If you removed it, there is nothing to do. If you did not, someone else may be using your account: check <a href="{{accountLink}}">your account page</a> and tell the administrator of {{box}}.</p>
`,
  },

  'password-changed': {
    subject: 'The password of your account on {{box}} was changed',
    text: `On {{box}}, the password of the account of {{email}} was changed, and everywhere it was
signed in was signed out.

If you changed it, there is nothing to do. If you did not, someone else may be using your account:
set a new password with a reset link ({{resetLink}}) and tell the administrator of {{box}}.
`,
    html: `<p>On {{box}}, the password of the account of {{email}} was changed, and everywhere it was signed in was signed out.</p>
<p>If you changed it, there is nothing to do. If you did not, someone else may be using your account: set a new password with <a href="{{resetLink}}">a reset link</a> and tell the administrator of {{box}}.</p>
`,
  },
};

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** The templates of each kind by language ('' is the default). */
export class Templates {
  private constructor(private readonly byKind: Record<MailKind, Map<string, Template>>) {}

  /** The built-in templates, overridden by the files of `dir`; a ConfigError names the file that is wrong. */
  static load(dir?: string): Templates {
    const byKind = Object.fromEntries(MAIL_KINDS.map((kind) => [kind, new Map([['', BUILT_IN[kind]]])])) as Record<
      MailKind,
      Map<string, Template>
    >;
    for (const [kind, language, template] of dir ? readDir(dir) : []) byKind[kind].set(language, template);
    for (const kind of MAIL_KINDS) for (const [language, template] of byKind[kind]) check(kind, language, template, dir);
    return new Templates(byKind);
  }

  /** The template for a mail asked for in `language` (a BCP 47 tag): its primary subtag's, else the default. */
  pick(kind: MailKind, language: string | undefined): Template {
    const primary = (language ?? '').split('-')[0]!.toLowerCase();
    const templates = this.byKind[kind];
    return templates.get(primary) ?? templates.get('')!;
  }
}

/** `template` with its placeholders filled: in the HTML, every value escaped. */
export function render(template: Template, values: Record<string, string>): { subject: string; text: string; html?: string } {
  const fill = (source: string, escape: (v: string) => string): string =>
    source.replace(PLACEHOLDER, (_, name: string) => escape(values[name] ?? ''));
  return {
    subject: fill(template.subject, (v) => v.replace(/[\r\n]+/g, ' ')),
    text: fill(template.text, (v) => v),
    ...(template.html !== undefined ? { html: fill(template.html, escapeHtml) } : {}),
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

function check(kind: MailKind, language: string, template: Template, dir: string | undefined): void {
  const allowed = PLACEHOLDERS[kind];
  for (const [part, source] of Object.entries(template)) {
    for (const [, name] of (source as string).matchAll(PLACEHOLDER)) {
      if (!allowed.includes(name!)) {
        const where = dir ? `BOXAUTH_MAIL_TEMPLATES: ${kind}${language ? `.${language}` : ''} (${part})` : `the built-in ${kind} template`;
        throw new ConfigError(
          `${where} names {{${name}}}, which a ${kind} mail does not have: it may name ${allowed.map((p) => `{{${p}}}`).join(', ')}`,
        );
      }
    }
  }
}
