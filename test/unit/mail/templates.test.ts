import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../../api/config.js';
import { factorWords } from '../../../api/mail/messages.js';
import { ENGLISH_MAILS } from '../../../api/mail/mails-en.js';
import { MAIL_LANGUAGES, mailLanguageProblems, named, PLACEHOLDERS, render, Templates } from '../../../api/mail/templates.js';
import { MAIL_KINDS } from '../../../api/mail/kinds.js';

function dirWith(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-templates-'));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}

describe('mail templates', function () {
  it('has a built-in subject, text and HTML for every kind, naming only its placeholders', function () {
    const templates = Templates.load();
    for (const kind of MAIL_KINDS) {
      const t = templates.pick(kind, undefined);
      expect(t.subject, kind).to.have.length.greaterThan(5);
      expect(t.html, kind).to.be.a('string');
      const values = Object.fromEntries(PLACEHOLDERS[kind].map((p) => [p, `<${p}>`]));
      const out = render(t, values);
      expect(out.text + out.subject + out.html).not.to.include('{{');
    }
  });

  it('ships the built-in mails in English and German, each complete: every kind and part, the same placeholders, the factor words', function () {
    expect(Object.keys(MAIL_LANGUAGES)).to.include.members(['en', 'de']);
    for (const [language, mails] of Object.entries(MAIL_LANGUAGES)) expect(mailLanguageProblems(mails), language).to.deep.equal([]);
  });

  it('finds a part missing, a placeholder that is not English’s, and a factor word missing', function () {
    const de = MAIL_LANGUAGES.de!;
    const { html: _dropped, ...textOnly } = de.templates['password-reset'];
    expect(mailLanguageProblems({ ...de, templates: { ...de.templates, 'password-reset': textOnly } })).to.deep.equal([
      'password-reset html is missing',
    ]);
    const noLink = { ...de.templates['verify-email'], text: 'Bestätigen Sie {{email}} bei {{box}} ({{hours}} Stunden).' };
    expect(mailLanguageProblems({ ...de, templates: { ...de.templates, 'verify-email': noLink } })).to.deep.equal([
      'verify-email text has the placeholders {{box, email, hours}}, English has {{box, email, hours, link}}',
    ]);
    const { recoveryCodes: _gone, ...factors } = de.factors;
    expect(mailLanguageProblems({ ...de, factors: factors as typeof de.factors })).to.deep.equal(['factor word recoveryCodes is missing']);
    expect(mailLanguageProblems(ENGLISH_MAILS)).to.deep.equal([]);
  });

  it('mails in German where the mail was asked for in German (de-CH too), in English for a language it does not have', function () {
    const templates = Templates.load();
    expect(templates.pick('password-reset', 'de-CH').subject).to.equal('Ihr Passwort bei {{box}} zurücksetzen');
    expect(templates.pick('factor-added', 'DE').text).to.match(/^Bei \{\{box\}\} wurde dem Konto von/);
    expect(templates.pick('password-reset', 'fr').subject).to.equal('Reset your password on {{box}}');
    expect(templates.pick('password-reset', undefined).subject).to.equal('Reset your password on {{box}}');
    const factor = (detail: string, language: string): string =>
      render({ subject: '', text: '{{factor}}' }, { factor: factorWords(detail, language) }).text;
    expect(factor('{"factor":"passkey","name":"Laptop"}', 'de-AT')).to.equal('ein Passkey namens „\u2068Laptop\u2069“');
    expect(factor('{"factor":"passkey","name":"$& {{name}}"}', 'en')).to.equal('a passkey named “\u2068$& {{name}}\u2069”');
    expect(factor('not json', 'de')).to.equal('eine Anmeldemethode');
    // A kind of factor in the words it declares (api/factor-kinds.ts mailWord), from the pages' catalogue of the mail's language.
    expect(factor('{"factor":"totp"}', 'de')).to.equal('eine Authenticator-App');
    expect(factor('{"factor":"email"}', 'en')).to.equal('sign-in codes by email');
    expect(factor('{"factor":"totp"}', 'fr')).to.equal('an authenticator app');
  });

  it('picks the mail language by its primary subtag, else the default; a directory overrides per language', function () {
    const templates = Templates.load(
      dirWith({
        'verify-email.txt': 'Subject: Check {{email}}\n\nDefault {{link}}\n',
        'verify-email.de.txt': 'Subject: Bitte bestätigen\n\nDeutsch {{link}}\n',
        'verify-email.de.html': '<p>{{email}}</p>',
      }),
    );
    expect(templates.pick('verify-email', 'de-AT').subject).to.equal('Bitte bestätigen');
    expect(templates.pick('verify-email', 'DE').text).to.equal('Deutsch {{link}}\n');
    expect(templates.pick('verify-email', 'fr').subject).to.equal('Check {{email}}');
    expect(templates.pick('verify-email', 'fr').html, 'a text-only override').to.equal(undefined);
    expect(templates.pick('password-reset', 'de').subject, 'kinds not overridden stay built in').to.match(/^Ihr Passwort/);
    expect(templates.pick('password-reset', 'fr').subject, 'kinds not overridden stay built in').to.match(/^Reset your password/);
    expect(templates.pick('verify-email', 'es').subject, "the admin's file of no language beats a built-in language").to.equal(
      'Check {{email}}',
    );
    const defaultOnly = Templates.load(dirWith({ 'verify-email.txt': 'Subject: Check {{email}}\n\nDefault {{link}}\n' }));
    expect(defaultOnly.pick('verify-email', 'de').subject, "the admin's words win over the built-in German").to.equal('Check {{email}}');
    const englishOnly = Templates.load(dirWith({ 'verify-email.en.txt': 'Subject: Check {{email}}\n\nEnglish {{link}}\n' }));
    expect(englishOnly.pick('verify-email', 'de').subject, 'an .en file leaves the built-in German').to.match(/^Bestätigen Sie/);
    expect(englishOnly.pick('verify-email', 'fr').subject, 'English for a language the box has no mails in').to.equal('Check {{email}}');
    expect(englishOnly.pick('verify-email', undefined).subject, 'and for a mail of no language').to.equal('Check {{email}}');
  });

  it('escapes values in HTML only, and keeps a subject on one line', function () {
    const out = render({ subject: 'Hi {{email}}', text: '{{email}}', html: '<b>{{ email }}</b>' }, { email: 'a<b>&"\'\r\nBcc: x' });
    expect(out.html).to.equal('<b>a&#60;b&#62;&#38;&#34;&#39;\r\nBcc: x</b>');
    expect(out.text).to.equal('a<b>&"\'\r\nBcc: x');
    expect(out.subject).to.equal('Hi a<b>&"\' Bcc: x');
  });

  it('isolates a name: between U+2068 and U+2069 in the subject and the text, in <bdi> in the HTML (escaped)', function () {
    const template = {
      subject: 'For {{email}}: {{factor}}',
      text: '{{email}} added {{factor}}.',
      html: '<p>{{email}} added {{factor}}.</p>',
    };
    const out = render(template, {
      email: named('ann\u202E<x>@example.com'),
      factor: named('Laptop\n', 'a passkey named “{{name}}”'),
    });
    expect(out.subject).to.equal('For \u2068ann\u202E<x>@example.com\u2069: a passkey named “\u2068Laptop \u2069”');
    expect(out.text).to.equal('\u2068ann\u202E<x>@example.com\u2069 added a passkey named “\u2068Laptop\n\u2069”.');
    expect(out.html).to.equal('<p><bdi>ann\u202E&#60;x&#62;@example.com</bdi> added a passkey named “<bdi>Laptop\n</bdi>”.</p>');
  });

  it('refuses at load a placeholder the kind does not have, a file of no kind, HTML without text, text without a subject', function () {
    const load = (files: Record<string, string>) => () => Templates.load(dirWith(files));
    expect(load({ 'password-reset.de.txt': 'Subject: x\n\n{{lnk}}\n' })).to.throw(
      ConfigError,
      /BOXAUTH_MAIL_TEMPLATES: password-reset\.de \(text\) names \{\{lnk\}\}, which a password-reset mail does not have: it may name \{\{box\}\}, \{\{email\}\}, \{\{link\}\}, \{\{minutes\}\}/,
    );
    expect(load({ 'already-registered.txt': 'Subject: {{link}}\n\nx\n' })).to.throw(ConfigError, /\(subject\) names \{\{link\}\}/);
    expect(load({ 'verify-email.html': '<p>{{ hours }}</p>', 'verify-email.txt': 'Subject: s\n\n{{minutes}}' })).to.throw(
      ConfigError,
      /\{\{minutes\}\}/,
    );
    expect(load({ 'welcome.txt': 'Subject: x\n\ny' })).to.throw(ConfigError, /welcome\.txt is not <kind>/);
    expect(load({ 'verify-email.fr.html': '<p></p>' })).to.throw(ConfigError, /verify-email\.fr\.html needs verify-email\.fr\.txt/);
    expect(load({ 'verify-email.txt': 'Hello\n\n{{link}}' })).to.throw(ConfigError, /must begin with a line "Subject: …"/);
  });
});
