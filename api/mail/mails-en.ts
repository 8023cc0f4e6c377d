// English: the built-in mails, the catalogue every other language of the mails translates
// (docs/guides/email.md#templates-and-languages). Every language has each kind, with a subject, a
// text and an HTML part naming the same {{placeholders}} as English's, and the words of {{factor}}
// (mailLanguageProblems in ./templates.ts; test/unit/mail/templates.test.ts runs it).
import { en, type Catalogue } from '../messages/en.js';
import type { MailKind } from './kinds.js';

export interface Template {
  subject: string;
  text: string;
  html?: string;
}

/**
 * How a language words what a factor mail names, as its {{factor}} ({{name}}: the passkey's or the
 * provider's), but a kind of factor: each kind of api/factor-kinds.ts is worded by its `mailWord`,
 * in the pages' catalogue of the language (`catalogue`), where its other words are.
 */
export interface FactorWords {
  passkeyNamed: string;
  recoveryCodes: string;
  everyFactor: string;
  providerNamed: string;
  provider: string;
  other: string;
}

/** A language's built-in mails: a template of every kind, the words of {{factor}}, and its pages' catalogue (a kind of factor's words). */
export interface MailLanguage {
  templates: Record<MailKind, Template>;
  factors: FactorWords;
  catalogue: Catalogue;
}

export const ENGLISH_MAILS: MailLanguage = {
  templates: {
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
    'sign-in-code': {
      subject: 'Your sign-in code for {{box}}: {{code}}',
      text: `Someone, hopefully you, is signing in to {{box}} as {{email}}, or setting up sign-in codes by email.

Your code: {{code}}

It works once, for {{minutes}} minutes, in the browser that asked for it. If it was not you, do not
give this code to anyone: someone is signing in as you. If you have a password, change it; and tell the
administrators of {{box}}.
`,
      html: `<p>Someone, hopefully you, is signing in to {{box}} as {{email}}, or setting up sign-in codes by email.</p>
<p>Your code: <strong>{{code}}</strong></p>
<p>It works once, for {{minutes}} minutes, in the browser that asked for it. If it was not you, do not give this code to anyone: someone is signing in as you. If you have a password, change it; and tell the
administrators of {{box}}.</p>
`,
    },
  },
  factors: {
    passkeyNamed: 'a passkey named “{{name}}”',
    recoveryCodes: 'a new set of recovery codes',
    everyFactor: 'every second factor and recovery code',
    providerNamed: 'signing in through “{{name}}”',
    provider: 'signing in through a provider',
    other: 'a way to sign in',
  },
  catalogue: en,
};
