import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../../../api/config.js';
import { PLACEHOLDERS, render, Templates } from '../../../api/mail/templates.js';
import { MAIL_KINDS } from '../../../api/store/mail-outbox.js';

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
    expect(templates.pick('password-reset', 'de').subject, 'kinds not overridden stay built in').to.match(/^Reset your password/);
  });

  it('escapes values in HTML only, and keeps a subject on one line', function () {
    const out = render({ subject: 'Hi {{email}}', text: '{{email}}', html: '<b>{{ email }}</b>' }, { email: 'a<b>&"\'\r\nBcc: x' });
    expect(out.html).to.equal('<b>a&#60;b&#62;&#38;&#34;&#39;\r\nBcc: x</b>');
    expect(out.text).to.equal('a<b>&"\'\r\nBcc: x');
    expect(out.subject).to.equal('Hi a<b>&"\' Bcc: x');
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
