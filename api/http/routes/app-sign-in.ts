// People in browsers at an app: the gateway routes <app url>/.boxauth/start,
// /callback and /sign-out here, with the app's Host (the flow and its safeguards are
// api/decision/app-sign-in.ts). The gateways' own doors are ../gate-endpoints.ts.
import { Request, Response, Router } from '../router.js';
import { ApiError } from '../../errors.js';
import {
  appCookieAttributes,
  CALLBACK_PATH,
  finishFlow,
  isSignOutToken,
  safeReturnPath,
  SIGN_OUT_PATH,
  START_PATH,
  signOutToken,
  startFlow,
  verifierOf,
} from '../../decision/app-sign-in.js';
import { audienceOf, type AppDirectory } from '../../decision/apps.js';
import { appCookieName, originOf } from '../../decision/engine.js';
import { checkAccessToken } from '../../credentials/access-tokens.js';
import { closeGrants } from '../../credentials/closing.js';
import { authorizationCode } from '../../oauth/grants/authorization-code.js';
import { s256Challenge } from '../../credentials/pkce.js';
import { isAcr } from '../../credentials/acr.js';
import type { GrantServices } from '../../oauth/grants/grant.js';
import { issuedThroughTokenPath, type TokenPathServices } from '../../oauth/token-endpoint.js';
import type { RecordCache } from '../../cache/record-cache.js';
import { browserPage } from '../browser-pages.js';
import type { AddressOf } from '../client-address.js';
import type { Stored } from '../../store/resources.js';
import type { Client, App } from '../../types.js';
import { words, type Text } from '../../ui/language.js';
import { appSignOutPage, messagePage } from '../../ui/pages.js';
import { pageForm } from '../body.js';
import { cookies } from '../browser-session.js';
import { renderPage } from '../pages.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  addressOf: AddressOf;
  clients: RecordCache<Stored<Client>>;
  apps: AppDirectory;
  csrfKey: Buffer;
}

/** What the sign-in at apps uses: the code grant, the token path, and the apps and clients it serves. */
export type AppSignInRouterServices = GrantServices & TokenPathServices & Pick<Needs, 'addressOf' | 'apps' | 'clients' | 'csrfKey'>;

export function appSignInRouter(svc: AppSignInRouterServices): Router {
  const router = new Router();
  const box = svc.config.box;

  async function appOf(req: Request): Promise<App> {
    const app = await svc.apps.byHost(req.headers.host ?? '');
    if (!app) throw new ApiError(404, 'not_found', `no app is reached at ${req.headers.host ?? 'this host'}`);
    return app;
  }
  /** A sign-in at an app that ends here, with the way on: back to the app, to begin again. */
  const page = (res: Response, status: number, title: Text, message: Text, app?: string): void =>
    renderPage(res, status, messagePage(box, title, message, true, app ? [{ href: app, label: words('wayOn.backToApp') }] : []));
  const stateCookie = (app: App, https: boolean): string => `${appCookieName(app, https)}-state`;

  router.get(browserPage(START_PATH), async (req, res) => {
    const app = await appOf(req);
    const origin = originOf(app, req.headers.host ?? '');
    const https = origin.startsWith('https:');
    const client = app.signIn && (await svc.clients.get(app.signIn.client));
    if (!client) return page(res, 404, words('appSignIn.notSetUp'), words('appSignIn.noClient', { app: app.id }));
    const flow = startFlow(svc.csrfKey, app, safeReturnPath(req.query.rd));
    const authorize = new URL(`${svc.config.baseUrl}/auth/authorize`);
    authorize.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.resource.id,
      redirect_uri: `${origin}${CALLBACK_PATH}`,
      scope: 'openid',
      state: flow.state,
      code_challenge: s256Challenge(flow.verifier),
      code_challenge_method: 'S256',
      resource: audienceOf(app),
      // A step-up the gate asked for (AccessPolicy.acr): the box's authorization endpoint asks for the missing factor.
      ...(isAcr(req.query.acr) ? { acr_values: req.query.acr } : {}),
    }).toString();
    res.append('Set-Cookie', `${stateCookie(app, https)}=${flow.nonce}${appCookieAttributes(https, 600)}`);
    res.set('Cache-Control', 'no-store').redirect(302, authorize.toString());
  });

  router.get(browserPage(CALLBACK_PATH), async (req, res) => {
    const app = await appOf(req);
    const origin = originOf(app, req.headers.host ?? '');
    const https = origin.startsWith('https:');
    const nonce = cookies(req)[stateCookie(app, https)];
    const back = finishFlow(svc.csrfKey, app, req.query.state, nonce);
    if (!back) return page(res, 400, words('appSignIn.linkInvalid'), words('appSignIn.linkInvalidMessage'), `${origin}/`);
    res.append('Set-Cookie', `${stateCookie(app, https)}=${appCookieAttributes(https, 0)}`);
    if (typeof req.query.error === 'string')
      return page(res, 403, words('upstream.notSignedIn'), words('appSignIn.ended', { error: req.query.error }), `${origin}${back.rd}`);
    const client = app.signIn && (await svc.clients.get(app.signIn.client));
    if (!client || typeof req.query.code !== 'string')
      return page(res, 400, words('appSignIn.linkInvalid'), words('appSignIn.goBack'), `${origin}/`);
    // The box exchanges its own code: the code is bound to the client, the redirect and the PKCE verifier.
    // It takes the token path every grant takes: counted and recorded there, once.
    const code = req.query.code;
    const issued = await issuedThroughTokenPath(
      svc,
      { grant: authorizationCode.type, client: client.resource.id },
      svc.addressOf(req),
      () =>
        authorizationCode.handle({
          svc,
          params: { code, redirect_uri: `${origin}${CALLBACK_PATH}`, code_verifier: verifierOf(svc.csrfKey, nonce!) },
          client: { ...client, method: 'box' },
        }),
    );
    res.append('Set-Cookie', `${appCookieName(app, https)}=${issued.access_token}${appCookieAttributes(https, issued.expires_in)}`);
    res.set('Cache-Control', 'no-store').redirect(302, `${origin}${back.rd}`);
  });

  // A GET only shows the form: a link or an image elsewhere signs nobody out.
  router.get(browserPage(SIGN_OUT_PATH), async (req, res) => {
    const app = await appOf(req);
    const https = originOf(app, req.headers.host ?? '').startsWith('https:');
    const cookie = cookies(req)[appCookieName(app, https)];
    renderPage(res, 200, appSignOutPage(box, app.description ?? app.id, cookie && signOutToken(svc.csrfKey, app, cookie)));
  });

  router.post(browserPage(SIGN_OUT_PATH), ...pageForm, async (req, res) => {
    const app = await appOf(req);
    const https = originOf(app, req.headers.host ?? '').startsWith('https:');
    const token = cookies(req)[appCookieName(app, https)];
    if (!isSignOutToken(svc.csrfKey, app, token, (req.body as Record<string, unknown>).csrf))
      return page(res, 403, words('appSignOut.notSignedOut'), words('appSignOut.notAsked'), `${originOf(app, req.headers.host ?? '')}/`);
    const check = await checkAccessToken(svc, token!);
    // Only the app's own session: a cookie of this name holding another token ends nothing.
    if ('session' in check && check.session.audience === audienceOf(app)) {
      const { session } = check;
      await closeGrants(svc, { tree: session.id }, { how: 'sign-out', by: { client: session.clientId, session: session.id } });
    }
    res.append('Set-Cookie', `${appCookieName(app, https)}=${appCookieAttributes(https, 0)}`);
    page(
      res,
      200,
      words('signedOut.title'),
      words('appSignOut.done', { app: app.description ?? app.id, url: `${svc.config.baseUrl}/auth/sign-out` }),
    );
  });

  return router;
}
