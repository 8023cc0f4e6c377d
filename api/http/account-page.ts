// The person's own page, /auth/account, as both its routers show it (api/http/routes/account.ts:
// address, password, sign-ins, apps; routes/factors.ts: second factors), and who may change it.
import { offersSignInCodes } from '../config.js';
import { MAILED_FACTOR_KINDS } from '../factor-kinds.js';
import type { Request, Response } from './router.js';
import { accountRecords, freshSecondFactor, provenRecently } from '../people/own-account.js';
import { accountPage } from '../ui/account-page.js';
import type { FieldErrors, Text } from '../ui/language.js';
import { csrfToken, csrfValid, type BrowserServices } from './browser-session.js';
import { accountHolder, invalidForm, renderPage, type SignedInPerson } from './pages.js';

export const ACCOUNT_PATH = '/auth/account';

/** What a page of the account shows besides its records: a message, an error, errors by field. */
export interface Shown {
  message?: Text;
  error?: Text;
  errors?: FieldErrors;
}

/** The person who may change their account (pages.ts accountHolder); otherwise the sign-in page, back here. */
export async function holderOrSignIn(svc: BrowserServices, req: Request, res: Response): Promise<SignedInPerson | undefined> {
  const person = await accountHolder(svc, req);
  if (!person) res.redirect(303, `/auth/sign-in?return_to=${encodeURIComponent(ACCOUNT_PATH)}`);
  return person;
}

/** A change posted from the account page: its CSRF token checked, the person as accountHolder says. */
export async function changeOnAccount(svc: BrowserServices, req: Request, res: Response): Promise<SignedInPerson | undefined> {
  if (!csrfValid(svc, req, (req.body as Record<string, unknown>).csrf)) return void invalidForm(svc, res);
  return holderOrSignIn(svc, req, res);
}

/** Where a person confirms it is them (routes/account.ts): their password again, or a sign-in again. */
export const CONFIRM_PATH = '/auth/account/confirm';

/** The pages a confirmation goes back to. */
export const CONFIRMED_PAGES = [ACCOUNT_PATH, '/auth/account/passkeys'] as const;

/** The confirmation page, coming back to `page`. */
export const confirmPath = (page: (typeof CONFIRMED_PAGES)[number]): string =>
  `${CONFIRM_PATH}?${new URLSearchParams({ return_to: page })}`;

export { provenRecently };

/**
 * A change of the person's factors posted from `page` (adding, removing, new recovery codes): as
 * changeOnAccount, and only after a recent proof — whoever holds a signed-in browser is not yet its
 * person (docs/security.md#what-a-sign-in-proves). Without one, the confirmation page, back to `page`.
 */
export async function factorChange(
  svc: BrowserServices,
  req: Request,
  res: Response,
  page: (typeof CONFIRMED_PAGES)[number] = ACCOUNT_PATH,
): Promise<SignedInPerson | undefined> {
  const person = await changeOnAccount(svc, req, res);
  if (person && !provenRecently(person)) return void res.redirect(303, confirmPath(page));
  return person;
}

export async function showAccount(
  svc: BrowserServices,
  req: Request,
  res: Response,
  person: SignedInPerson,
  status = 200,
  shown: Shown = {},
): Promise<void> {
  const { user, browser } = person;
  const records = await accountRecords(svc, user.id);
  renderPage(
    res,
    status,
    accountPage({
      box: svc.config.box,
      csrf: csrfToken(svc, req, res),
      email: user.email,
      emailVerified: user.emailVerified,
      mail: svc.config.smtp !== undefined,
      mailedOffered: offersSignInCodes(svc.config.smtp) ? MAILED_FACTOR_KINDS : [],
      ...records,
      sid: browser.sid,
      fresh: freshSecondFactor(browser, Date.now()),
      recent: provenRecently(person),
      ...shown,
    }),
  );
}
