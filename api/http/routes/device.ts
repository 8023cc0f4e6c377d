// The page where a person connects a device (RFC 8628 §3.3): behind sign-in, they
// type the user code their device shows, see which client asks for what, and allow
// or deny. A wrong code, typed on the page or sent in the form, counts as a failed
// attempt of the person (the sign-in throttle), so that user codes cannot be
// guessed by trying them all.
import { Request, Response, Router } from '../router.js';
import { answerDeviceCode, formatUserCode, pendingDeviceCode } from '../../oauth/device.js';
import type { RecordCache } from '../../cache/record-cache.js';
import type { Stored } from '../../store/resources.js';
import type { Client } from '../../types.js';
import type { Attempts } from '../../people/attempts.js';
import { browserPage } from '../browser-pages.js';
import type { AddressOf } from '../client-address.js';
import { words, type Text } from '../../ui/language.js';
import { deviceCodePage, deviceConsentPage, messagePage } from '../../ui/pages.js';
import { pageForm } from '../body.js';
import { csrfToken, csrfValid, type BrowserServices } from '../browser-session.js';
import { renderPage, signedInPerson, signInForm, type SignedInPerson } from '../pages.js';
import { stepUp } from '../sign-in-steps.js';
import type { Acr } from '../../credentials/acr.js';
import { mustStepUp, wayAccepted } from '../../credentials/sign-in.js';
import { acrWantedOf } from '../../people/steps.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  clients: RecordCache<Stored<Client>>;
  attempts: Attempts;
  addressOf: AddressOf;
}

/** What the device page uses: the signed-in person, the attempts of the throttle, the device code and its client. */
export type DeviceRouterServices = BrowserServices & Pick<Needs, 'addressOf' | 'attempts' | 'clients'>;

/** The form's answer when the sign-in must be stronger first. */
// The page again: it asks for what is missing (a step-up, or a sign-in one of the client's ways).
const STEP_UP = Symbol('step-up');

/** Why a code typed on the page was not taken (a wrong or spent code, too many of them), said on the form. */
class Miss {
  constructor(readonly why: Text) {}
}

export function deviceRouter(svc: DeviceRouterServices): Router {
  const router = new Router();
  const box = svc.config.box;

  /**
   * `attempt` (a look-up or a decision on the code a signed-in person typed), or
   * why not: every miss counts, so the form and the page alike stop a guesser.
   */
  async function throttled<T>(req: Request, userId: number, attempt: () => Promise<T | undefined>, miss: Text): Promise<T | Miss> {
    const keys = [{ deviceCodesOf: userId }, { address: svc.addressOf(req) }];
    if (await svc.attempts.begin(keys)) return new Miss(words('device.tooManyCodes'));
    const found = await attempt();
    if (found === undefined) return new Miss(miss);
    await svc.attempts.giveBack(keys);
    return found;
  }

  /**
   * The class of sign-in the person's own rules and the device's client want, when this
   * browser's sign-in falls short of it (a group that requires a second factor, the client's
   * minimum_acr): the device is connected only after a step-up, as an app's code would be.
   */
  async function stepUpWanted(person: SignedInPerson, clientId: string | undefined): Promise<Acr | undefined> {
    const client = clientId === undefined ? undefined : await svc.clients.get(clientId);
    const want = await acrWantedOf(svc, person.user.id, undefined, client?.resource.minimum_acr);
    return want !== undefined && mustStepUp({ ...person.browser, userId: String(person.user.id) }, want) ? want : undefined;
  }

  const stepUpTo = (req: Request, res: Response, person: SignedInPerson, acr: Acr, returnTo: string): Promise<void> =>
    stepUp(svc, req, res, person, { returnTo, acr });

  /** Whether the device's client accepts the way this browser signed in (Client.identityProviders), and the ways it does. */
  async function wayOf(person: SignedInPerson, clientId: string): Promise<{ ok: boolean; accepted: readonly string[] | undefined }> {
    const accepted = (await svc.clients.get(clientId))?.resource.identityProviders;
    return { ok: wayAccepted(accepted, person.browser.provider), accepted };
  }

  router.get(browserPage('/auth/device/verify'), async (req: Request, res: Response) => {
    const person = await signedInPerson(svc, req);
    if (!person) {
      res.redirect(303, `/auth/sign-in?${new URLSearchParams({ return_to: req.originalUrl })}`);
      return;
    }
    const typed = typeof req.query.user_code === 'string' ? req.query.user_code : undefined;
    if (!typed) {
      const want = await stepUpWanted(person, undefined);
      if (want) return stepUpTo(req, res, person, want, '/auth/device/verify');
      return renderPage(res, 200, deviceCodePage({ box }));
    }
    const code = await throttled(req, person.user.id, () => pendingDeviceCode(svc, typed), words('device.invalidCode'));
    if (code instanceof Miss) return renderPage(res, 400, deviceCodePage({ box, code: typed, error: code.why }));
    const here = `/auth/device/verify?${new URLSearchParams({ user_code: typed })}`;
    // Signed in a way the device's client does not accept: a sign-in again, one of its ways.
    const way = await wayOf(person, code.clientId);
    if (!way.ok) return signInForm(svc, req, res, 200, here, {}, { accepted: way.accepted });
    const want = await stepUpWanted(person, code.clientId);
    if (want) return stepUpTo(req, res, person, want, here);
    const client = await svc.clients.get(code.clientId);
    renderPage(
      res,
      200,
      deviceConsentPage({
        box,
        csrf: csrfToken(svc, req, res),
        code: formatUserCode(code.userCode),
        clientId: code.clientId,
        ...(client?.resource.description ? { clientDescription: client.resource.description } : {}),
        ...(code.scope ? { scope: code.scope } : {}),
        email: person.user.email,
      }),
    );
  });

  router.post(browserPage('/auth/device/verify'), ...pageForm, async (req: Request, res: Response) => {
    const body = req.body as Record<string, unknown>;
    if (!csrfValid(svc, req, body.csrf)) {
      return renderPage(res, 403, messagePage(box, words('form.expired'), words('form.expiredShort')));
    }
    const person = await signedInPerson(svc, req);
    if (!person) return renderPage(res, 401, messagePage(box, words('signedOut.title'), words('device.signedOut')));
    const typed = typeof body.user_code === 'string' ? body.user_code : '';
    const allowed = body.decision === 'allow';
    // Throttled as the page is: a form sent straight here must not make guessing codes free.
    const decided = await throttled(
      req,
      person.user.id,
      async () => {
        // A form sent straight here is held to what the page holds the person to: no device
        // is connected through a sign-in that falls short (the page then asks for the factor).
        const pending = await pendingDeviceCode(svc, typed);
        if (pending && allowed && (!(await wayOf(person, pending.clientId)).ok || (await stepUpWanted(person, pending.clientId))))
          return STEP_UP;
        const { authTime, sid, amr } = person.browser;
        return (await answerDeviceCode(svc, typed, { allowed, userId: person.user.id, authTime, sid, amr })) || undefined;
      },
      words('device.codeGone'),
    );
    if (decided instanceof Miss) return renderPage(res, 400, deviceCodePage({ box, code: typed, error: decided.why }));
    if (decided === STEP_UP) return res.redirect(303, `/auth/device/verify?${new URLSearchParams({ user_code: typed })}`);
    renderPage(
      res,
      200,
      allowed
        ? messagePage(box, words('device.connected'), words('device.connectedMessage'), false)
        : messagePage(box, words('device.refused'), words('device.refusedMessage'), false),
    );
  });

  return router;
}
