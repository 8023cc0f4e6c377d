// Written by `make generate` (scripts/write-factor-kinds.mjs) from the FACTOR_KIND of each way of
// api/people/ways/: do not edit. What each field says: FactorKindSpec in ./factor-kinds.ts.
export const DECLARED_FACTOR_KINDS = {
  // api/people/ways/passkey.ts
  passkey: {
    kind: 'passkey',
    position: 10,
    label: 'factor.passkeyKind',
    mailWord: 'factor.passkeyInMail',
    ssfCredential: 'fido2-platform',
    webauthn: {
      path: 'passkeys',
      words: { use: 'step.usePasskey', add: 'passkeys.add', title: 'passkeys.title', orAdd: 'enrol.orPasskey' },
    },
  },
  // api/people/ways/totp.ts
  totp: {
    kind: 'totp',
    position: 20,
    label: 'factor.appKind',
    mailWord: 'factor.appInMail',
    ssfCredential: 'app',
    app: {
      moving: { period: 30 },
      name: 'Authenticator app',
      path: 'totp',
      field: 'code',
      words: {
        code: 'step.appCode',
        hint: 'step.appCodeHint',
        heading: 'enrol.appHeading',
        scan: 'enrol.scan',
        setUp: 'account.setUpApp',
        already: 'account.appAlready',
      },
    },
  },
  // api/people/ways/email-code.ts
  email: {
    kind: 'email',
    position: 30,
    label: 'factor.emailKind',
    mailWord: 'factor.emailInMail',
    ssfCredential: 'email-code',
    mailed: {
      name: 'Codes by email',
      path: 'email-codes',
      field: 'email_code',
      words: {
        heading: 'email.heading',
        intro: 'email.intro',
        send: 'email.send',
        sent: 'email.sent',
        code: 'email.code',
        hint: 'email.codeHint',
        wrongCode: 'email.wrongCode',
        tooMany: 'email.tooMany',
        addressFirst: 'email.addressFirst',
        notOffered: 'email.notOffered',
        orSetUp: 'enrol.orEmail',
        setUp: 'account.setUpEmail',
        already: 'account.emailAlready',
      },
    },
  },
} as const;
