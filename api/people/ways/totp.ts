// An authenticator app's codes by the clock (TOTP, RFC 6238): a kind of second factor, every part
// of it said here — what ./app-codes.ts checks and sets up, the pages show and the mails say is
// drawn from this declaration (api/factor-kinds.ts; `make generate` copies it there).
import type { FactorKindSpec } from '../../factor-kinds.js';

/** TOTP: HMAC-SHA1, six digits, a 30-second step (docs/guides/second-factors.md). */
export const FACTOR_KIND = {
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
} as const satisfies FactorKindSpec;
