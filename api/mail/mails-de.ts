// Deutsch: the built-in mails in the Sie-Form, as the pages speak (api/messages/de.ts). Each kind
// of ./mails-en.ts, naming the same {{placeholders}} (test/unit/mail/templates.test.ts checks).
import { de } from '../messages/de.js';
import type { MailLanguage } from './mails-en.js';

export const GERMAN_MAILS: MailLanguage = {
  templates: {
    'password-reset': {
      subject: 'Ihr Passwort bei {{box}} zurücksetzen',
      text: `Jemand, hoffentlich Sie, möchte das Passwort von {{email}} bei {{box}} zurücksetzen.

Wählen Sie hier ein neues Passwort (der Link gilt einmal, {{minutes}} Minuten lang):

{{link}}

Wenn Sie das nicht angefordert haben, ignorieren Sie diese E-Mail: Ihr Passwort bleibt, wie es ist.
`,
      html: `<p>Jemand, hoffentlich Sie, möchte das Passwort von {{email}} bei {{box}} zurücksetzen.</p>
<p><a href="{{link}}">Neues Passwort wählen</a> (der Link gilt einmal, {{minutes}} Minuten lang).</p>
<p>Wenn Sie das nicht angefordert haben, ignorieren Sie diese E-Mail: Ihr Passwort bleibt, wie es ist.</p>
`,
    },
    'verify-email': {
      subject: 'Bestätigen Sie Ihre E-Mail-Adresse bei {{box}}',
      text: `Bestätigen Sie mit diesem Link, dass {{email}} Ihre Adresse bei {{box}} ist (er gilt {{hours}} Stunden lang):

{{link}}

Wenn Sie sich bei {{box}} weder registriert noch Ihre Adresse geändert haben, ignorieren Sie diese E-Mail.
`,
      html: `<p>Bestätigen Sie, dass {{email}} Ihre Adresse bei {{box}} ist:</p>
<p><a href="{{link}}">Meine Adresse bestätigen</a> (der Link gilt {{hours}} Stunden lang).</p>
<p>Wenn Sie sich bei {{box}} weder registriert noch Ihre Adresse geändert haben, ignorieren Sie diese E-Mail.</p>
`,
    },
    'already-registered': {
      subject: 'Ihr Konto bei {{box}}',
      text: `Jemand wollte sich bei {{box}} mit {{email}} registrieren, doch für diese Adresse gibt es schon ein Konto.

Waren Sie es, melden Sie sich an: {{signInLink}}
Passwort vergessen? Setzen Sie es zurück: {{resetLink}}

Waren Sie es nicht, ignorieren Sie diese E-Mail: Es hat sich nichts geändert.
`,
      html: `<p>Jemand wollte sich bei {{box}} mit {{email}} registrieren, doch für diese Adresse gibt es schon ein Konto.</p>
<p>Waren Sie es, <a href="{{signInLink}}">melden Sie sich an</a>. Passwort vergessen? <a href="{{resetLink}}">Setzen Sie es zurück</a>.</p>
<p>Waren Sie es nicht, ignorieren Sie diese E-Mail: Es hat sich nichts geändert.</p>
`,
    },
    'confirm-email-change': {
      subject: 'Bestätigen Sie Ihre neue E-Mail-Adresse bei {{box}}',
      text: `Das Konto von {{oldEmail}} bei {{box}} möchte von nun an {{email}} verwenden.

Wenn Sie das sind, bestätigen Sie es hier (der Link gilt {{hours}} Stunden lang); das Passwort des Kontos wird abgefragt:

{{link}}

Wenn Sie das nicht angefordert haben, ignorieren Sie diese E-Mail: Es ändert sich nichts.
`,
      html: `<p>Das Konto von {{oldEmail}} bei {{box}} möchte von nun an {{email}} verwenden.</p>
<p>Wenn Sie das sind, <a href="{{link}}">bestätigen Sie es</a> (der Link gilt {{hours}} Stunden lang); das Passwort des Kontos wird abgefragt.</p>
<p>Wenn Sie das nicht angefordert haben, ignorieren Sie diese E-Mail: Es ändert sich nichts.</p>
`,
    },
    'email-changed': {
      subject: 'Ihre Adresse bei {{box}} wurde geändert',
      text: `Die Adresse Ihres Kontos bei {{box}} wurde von {{email}} in {{newEmail}} geändert.

Wenn Sie sie geändert haben, ist nichts zu tun. Wenn nicht, verwendet vielleicht jemand anderes Ihr
Konto: Sagen Sie es sofort den Administratoren von {{box}}.
`,
      html: `<p>Die Adresse Ihres Kontos bei {{box}} wurde von {{email}} in {{newEmail}} geändert.</p>
<p>Wenn Sie sie geändert haben, ist nichts zu tun. Wenn nicht, verwendet vielleicht jemand anderes Ihr Konto: Sagen Sie es sofort den Administratoren von {{box}}.</p>
`,
    },
    'factor-added': {
      subject: 'Ihrem Konto bei {{box}} wurde eine Anmeldemethode hinzugefügt',
      text: `Bei {{box}} wurde dem Konto von {{email}} Folgendes hinzugefügt: {{factor}}.

Wenn Sie das waren, ist nichts zu tun. Wenn nicht, verwendet vielleicht jemand anderes Ihr Konto:
Entfernen Sie es auf Ihrer Kontoseite ({{accountLink}}), ändern Sie dort Ihr Passwort und sagen Sie
es den Administratoren von {{box}}.
`,
      html: `<p>Bei {{box}} wurde dem Konto von {{email}} Folgendes hinzugefügt: {{factor}}.</p>
<p>Wenn Sie das waren, ist nichts zu tun. Wenn nicht, verwendet vielleicht jemand anderes Ihr Konto: Entfernen Sie es auf <a href="{{accountLink}}">Ihrer Kontoseite</a>, ändern Sie dort Ihr Passwort und sagen Sie es den Administratoren von {{box}}.</p>
`,
    },
    'factor-removed': {
      subject: 'Von Ihrem Konto bei {{box}} wurde eine Anmeldemethode entfernt',
      text: `Bei {{box}} wurde vom Konto von {{email}} Folgendes entfernt: {{factor}}.

Wenn Sie das waren, ist nichts zu tun. Wenn nicht, verwendet vielleicht jemand anderes Ihr Konto:
Prüfen Sie Ihre Kontoseite ({{accountLink}}) und sagen Sie es den Administratoren von {{box}}.
`,
      html: `<p>Bei {{box}} wurde vom Konto von {{email}} Folgendes entfernt: {{factor}}.</p>
<p>Wenn Sie das waren, ist nichts zu tun. Wenn nicht, verwendet vielleicht jemand anderes Ihr Konto: Prüfen Sie <a href="{{accountLink}}">Ihre Kontoseite</a> und sagen Sie es den Administratoren von {{box}}.</p>
`,
    },
    'password-changed': {
      subject: 'Das Passwort Ihres Kontos bei {{box}} wurde geändert',
      text: `Bei {{box}} wurde das Passwort des Kontos von {{email}} geändert, und überall, wo es angemeldet
war, wurde es abgemeldet.

Wenn Sie es geändert haben, ist nichts zu tun. Wenn nicht, verwendet vielleicht jemand anderes Ihr
Konto: Setzen Sie mit einem Link zum Zurücksetzen ({{resetLink}}) ein neues Passwort und sagen Sie es
den Administratoren von {{box}}.
`,
      html: `<p>Bei {{box}} wurde das Passwort des Kontos von {{email}} geändert, und überall, wo es angemeldet war, wurde es abgemeldet.</p>
<p>Wenn Sie es geändert haben, ist nichts zu tun. Wenn nicht, verwendet vielleicht jemand anderes Ihr Konto: Setzen Sie mit <a href="{{resetLink}}">einem Link zum Zurücksetzen</a> ein neues Passwort und sagen Sie es den Administratoren von {{box}}.</p>
`,
    },
    'sign-in-code': {
      subject: 'Ihr Anmeldecode für {{box}}: {{code}}',
      text: `Jemand, hoffentlich Sie, meldet sich bei {{box}} als {{email}} an oder richtet Anmeldecodes per E-Mail ein.

Ihr Code: {{code}}

Er gilt einmal, {{minutes}} Minuten lang, in dem Browser, der ihn angefordert hat. Wenn Sie es nicht
waren, geben Sie diesen Code niemandem: Jemand meldet sich als Sie an. Wenn Sie ein Passwort haben,
ändern Sie es; und sagen Sie es den Administratoren von {{box}}.
`,
      html: `<p>Jemand, hoffentlich Sie, meldet sich bei {{box}} als {{email}} an oder richtet Anmeldecodes per E-Mail ein.</p>
<p>Ihr Code: <strong>{{code}}</strong></p>
<p>Er gilt einmal, {{minutes}} Minuten lang, in dem Browser, der ihn angefordert hat. Wenn Sie es nicht waren, geben Sie diesen Code niemandem: Jemand meldet sich als Sie an. Wenn Sie ein Passwort haben, ändern Sie es; und sagen Sie es den Administratoren von {{box}}.</p>
`,
    },
  },
  factors: {
    passkeyNamed: 'ein Passkey namens „{{name}}“',
    recoveryCodes: 'ein neuer Satz Wiederherstellungscodes',
    everyFactor: 'jeder zweite Faktor und jeder Wiederherstellungscode',
    providerNamed: 'die Anmeldung über „{{name}}“',
    provider: 'die Anmeldung über einen Anbieter',
    other: 'eine Anmeldemethode',
  },
  catalogue: de,
};
