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
  },
} as const;
