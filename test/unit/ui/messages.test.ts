// The catalogues of the pages (api/messages/): complete in every language the box ships, picked
// by Accept-Language, and written right to left where a language is.
import { expect } from 'chai';
import fs from 'node:fs';
import { FACTOR_KIND_NAMES, isWebAuthnKind, MAILED_FACTOR_KINDS } from '../../../api/factor-kinds.js';
import { MAIL_LANGUAGES, mailLanguageProblems } from '../../../api/mail/templates.js';
import { PLAIN_LOOK } from '../../../api/ui/frame.js';
import { catalogueProblems, LANGUAGES, pickLanguage, sayer, shown, words, type Language, type Text } from '../../../api/ui/language.js';
import { secondFactorPage } from '../../../api/ui/factor-pages.js';
import type { Page } from '../../../api/ui/frame.js';
import { en, type Catalogue } from '../../../api/messages/en.js';
import { messagePage, signInPage } from '../../../api/ui/pages.js';
import { projectPath } from '../../../api/paths.js';
import { strayTexts } from '../../support/page-words.js';

/** A catalogue of the test only: Arabic-script placeholders for every string, to see a right-to-left page. */
const rtlTest: Language = {
  tag: 'ar',
  name: 'test',
  dir: 'rtl',
  messages: Object.fromEntries(
    Object.entries(en).map(([key, text]) => [key, `نص ${[...text.matchAll(/\{[a-zA-Z]+\}/g)].map((m) => m[0]).join(' ')}`.trim()]),
  ) as Catalogue,
};

describe('the catalogues of the pages', function () {
  it('ships English and at least one more language, each complete: every key of English, no other, the same placeholders', function () {
    expect(LANGUAGES.map((l) => l.tag)).to.include.members(['en', 'de']);
    for (const language of LANGUAGES) expect(catalogueProblems(language.messages), language.tag).to.deep.equal([]);
  });

  it('has the built-in mails of every language of the pages, complete: a page in a language leads to a mail in it', function () {
    for (const language of LANGUAGES) {
      const mails = MAIL_LANGUAGES[language.tag.split('-')[0]!.toLowerCase()];
      expect(mails, `the built-in mails of ${language.tag} (api/mail/mails-${language.tag}.ts)`).not.to.equal(undefined);
      expect(mailLanguageProblems(mails!), language.tag).to.deep.equal([]);
    }
  });

  it('finds a missing key, an extra key, and a placeholder that is not English’s', function () {
    const { 'signIn.title': _dropped, ...missing } = en;
    expect(catalogueProblems(missing)).to.deep.equal(['missing key signIn.title']);
    expect(catalogueProblems({ ...en, 'signIn.titel': 'Anmelden' })).to.deep.equal(['extra key signIn.titel']);
    expect(catalogueProblems({ ...en, 'reset.sent': 'Ein Link ist an {mail} unterwegs, {minutes} Minuten lang.' })).to.deep.equal([
      'reset.sent has the placeholders {mail, minutes}, English has {email, minutes}',
    ]);
    expect(catalogueProblems({ ...en, 'signIn.newHere': 'Neu hier?' })).to.have.length(1);
    expect(catalogueProblems(rtlTest.messages)).to.deep.equal([]);
  });

  it('picks the language by Accept-Language: q-values, the order of equal ones, a region cut off, English otherwise', function () {
    const tag = (header: string | undefined): string => pickLanguage(header).tag;
    expect(tag(undefined)).to.equal('en');
    expect(tag('')).to.equal('en');
    expect(tag('de')).to.equal('de');
    expect(tag('de-CH, en;q=0.5')).to.equal('de');
    expect(tag('en;q=0.4, de;q=0.9')).to.equal('de');
    expect(tag('fr-FR, fr;q=0.9, de;q=0.8, en;q=0.7')).to.equal('de');
    expect(tag('fr, it')).to.equal('en');
    expect(tag('de;q=0, fr')).to.equal('en');
    expect(tag('*')).to.equal('en');
    expect(tag('DE-at')).to.equal('de');
    expect(tag('de;q=2, en')).to.equal('en', 'a weight that is no qvalue is not read');
    expect(tag('<script>, de')).to.equal('de');
    expect(tag('x'.repeat(5000))).to.equal('en');
  });

  it('fills placeholders with escaped text, and never reads HTML from a catalogue', function () {
    const say = sayer({ ...rtlTest, dir: 'ltr', messages: { ...en, 'signIn.newHere': '<b>{link}</b> & more' } });
    expect(say('signIn.newHere', { link: '<a href="x">' }).text).to.equal('&lt;b&gt;&lt;a href=&quot;x&quot;&gt;&lt;/b&gt; &amp; more');
  });

  it('says a sentence put into another in the same language, a value shown as written escaped', function () {
    const say = sayer(LANGUAGES.find((l) => l.tag === 'de')!);
    const said = say('error.detail', {
      message: words('error.retry', { message: words('error.unavailableMessage'), seconds: 5 }),
      detail: '<x>',
    });
    expect(said.text).to.equal(
      'Die Box kann gerade nicht antworten. Versuchen Sie es in 5 Sekunden noch einmal. (Der Grund der Box, für die Entwickler: &lt;x&gt;.)',
    );
    expect(say('error.retry', { message: shown('<b>'), seconds: 2 }).text).to.equal(
      '&lt;b&gt; Versuchen Sie es in 2 Sekunden noch einmal.',
    );
  });

  it('says lang and dir on <html>: ltr for English and German, rtl for a right-to-left language', function () {
    const shown = { box: 'default', csrf: 'c', returnTo: '/', registration: false, providers: [], own: true, usernames: false };
    const de = LANGUAGES.find((l) => l.tag === 'de')!;
    expect(signInPage(shown)(PLAIN_LOOK)).to.include('<html lang="en" dir="ltr">').and.include('>Sign in</h1>');
    expect(signInPage(shown)({ ...PLAIN_LOOK, language: de }))
      .to.include('<html lang="de" dir="ltr">')
      .and.include('>Anmelden</h1>');
    const rtl = messagePage(
      'default',
      { key: 'upstream.notSignedIn' },
      { key: 'upstream.notCompleted' },
    )({ ...PLAIN_LOOK, language: rtlTest });
    expect(rtl).to.include('<html lang="ar" dir="rtl">').and.include('نص');
  });

  it('lays the pages out with logical properties only, so that a right-to-left page mirrors', function () {
    const css = fs.readFileSync(projectPath('api', 'ui', 'assets', 'boxauth.css'), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
    expect(css.match(/[^{}]*\{[^}]*\b(left|right)\b[^}]*\}/g) ?? []).to.deep.equal([]);
  });
});

describe('the words of a German page', function () {
  const de = LANGUAGES.find((l) => l.tag === 'de')!;
  const inGerman = (p: Page): string => p({ ...PLAIN_LOOK, language: de });
  const step = { box: 'default', csrf: 'c', returnTo: '/', acr: undefined };
  const secondFactor = (error: Text): string =>
    inGerman(
      secondFactorPage({
        ...step,
        kinds: FACTOR_KIND_NAMES.filter((kind) => !isWebAuthnKind(kind)),
        address: 'ann@example.com',
        sent: MAILED_FACTOR_KINDS[0]!,
        recoveryCodes: true,
        hasFactor: true,
        error,
      }),
    );

  it('are all the catalogue’s: the second-factor page, its refusals, a message page and the sign-in page', function () {
    const data = ['default', 'ann@example.com'];
    expect(strayTexts(secondFactor(words('code.tooMany', { minutes: 5 })), de, data)).to.deep.equal([]);
    expect(strayTexts(secondFactor(words('step.wrongRecoveryCode')), de, data)).to.deep.equal([]);
    expect(
      strayTexts(inGerman(messagePage('default', words('saml.cannotGoOn'), words('saml.requestRefused', { reason: 'x' }))), de, data),
    ).to.deep.equal([]);
    const shownPage = { box: 'default', csrf: 'c', returnTo: '/', registration: true, providers: [], own: true, usernames: false };
    expect(strayTexts(inGerman(signInPage({ ...shownPage, error: words('error.busy') })), de, data)).to.deep.equal([]);
  });

  it('finds an English sentence written into it as it is', function () {
    const english = secondFactor(shown('Too many wrong codes. Try again in 5 minutes.'));
    expect(strayTexts(english, de, ['default', 'ann@example.com'])).to.deep.equal(['Too many wrong codes. Try again in 5 minutes.']);
  });
});
