// The pages of second factors name no kind (api/ui/factor-pages.ts, account-page.ts): each kind's part
// is drawn from its declaration, by its shape (api/factor-kinds.ts `webauthn`, `app`, `mailed`). Shown
// with two kinds the test declares, as a new way's FACTOR_KIND would be: a mailed one and a WebAuthn one.
import { expect } from 'chai';
import { FACTOR_KIND_NAMES, FACTOR_KINDS, type FactorKind, type FactorKindSpec, type MailedFactorKind } from '../../../api/factor-kinds.js';
import { en } from '../../../api/messages/en.js';
import { accountPage } from '../../../api/ui/account-page.js';
import { adminPage } from '../../../api/ui/admin.js';
import { enrolPage, mailedCodePage, secondFactorPage } from '../../../api/ui/factor-pages.js';
import { PLAIN_LOOK, type Page } from '../../../api/ui/frame.js';
import { LANGUAGES } from '../../../api/ui/language.js';

const english = LANGUAGES.find((l) => l.tag === 'en')!;
const inEnglish = (p: Page): string => p({ ...PLAIN_LOOK, language: english });
const step = { box: 'default', csrf: 'c', returnTo: '/', acr: undefined };

/** Codes by text message, as its way would declare it: the words of codes by email, a field and a path of its own. */
const SMS: FactorKindSpec = {
  kind: 'sms',
  position: 40,
  label: 'factor.emailKind',
  mailWord: 'factor.emailInMail',
  ssfCredential: 'phone-sms',
  mailed: { ...FACTOR_KINDS.email.mailed, name: 'Codes by text', path: 'sms-codes', field: 'sms_code' },
};
/** A security key beside passkeys: its ceremonies under a path of its own. */
const KEY: FactorKindSpec = {
  kind: 'key',
  position: 15,
  label: 'factor.passkeyKind',
  mailWord: 'factor.passkeyInMail',
  ssfCredential: 'fido2-roaming',
  webauthn: { ...FACTOR_KINDS.passkey.webauthn, path: 'security-keys' },
};
const sms = 'sms' as MailedFactorKind;
const key = 'key' as FactorKind;

describe('the pages of second factors, drawn from the kinds declared', function () {
  const registry = FACTOR_KINDS as unknown as Record<string, FactorKindSpec>;
  before(function () {
    registry.sms = SMS;
    registry.key = KEY;
  });
  after(function () {
    delete registry.sms;
    delete registry.key;
  });

  it('gives a WebAuthn kind held its button, and a mailed kind "send a code" and its field, with no line of the page for them', function () {
    const page = inEnglish(
      secondFactorPage({ ...step, kinds: [key, sms], address: 'ann@example.com', sent: sms, recoveryCodes: false, hasFactor: true }),
    );
    expect(page).to.include('id="use-key"').and.include('data-begin="/auth/security-keys/authenticate/options"');
    expect(page).to.include('<section id="sms-codes">').and.include('id="send-sms-code"').and.include('name="send" value="sms"');
    expect(page).to.include('id="sms-code-sent"').and.include('name="sms_code"').and.include(en['email.codeHint']);
    expect(page).not.to.include('email_code');
  });

  it('offers them on the enrolment page instead of an app, and a mailed kind its page of the code mailed', function () {
    const page = inEnglish(
      enrolPage({ ...step, app: 'totp', offer: [key, sms], action: '/enrol', qrSvg: '', secret: 'S', phrOnly: false }),
    );
    expect(page).to.include('id="add-key"').and.include('data-begin="/auth/security-keys/register/options"');
    expect(page).to.include('id="send-sms-code"').and.include(en['enrol.orEmail']);
    const mailed = inEnglish(mailedCodePage({ ...step, kind: sms, action: '/enrol', address: 'ann@example.com', sent: true }));
    expect(mailed).to.include('name="sms_code"').and.include('id="sms-code-sent"');
  });

  it('offers a mailed kind on the account page, at its own path', function () {
    const page = inEnglish(
      accountPage({
        box: 'default',
        csrf: 'c',
        email: 'ann@example.com',
        emailVerified: true,
        mail: true,
        mailedOffered: [sms],
        factors: [],
        recoveryCodesLeft: 0,
        sid: 's',
        fresh: true,
        recent: true,
        signIns: [],
        grants: [],
        consents: [],
        providers: [],
      }),
    );
    expect(page).to.include('action="/auth/account/sms-codes"');
  });

  it("hands the admin console's script every kind's name", function () {
    const page = adminPage('default', 'https://auth.example.com', { displayName: undefined, logoUrl: undefined } as never);
    const names = /data-factor-kinds="([^"]*)"/.exec(page)?.[1]?.replaceAll('&quot;', '"');
    expect(JSON.parse(names ?? '{}')).to.deep.equal(Object.fromEntries(FACTOR_KIND_NAMES.map((k) => [k, en[FACTOR_KINDS[k].label]])));
  });
});
