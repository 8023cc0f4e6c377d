// The admin UI (/admin), the box's root (/), the static assets of the pages and the box's own
// documentation (/docs: the Markdown pages of docs/, read-only).
import { Router } from '../router.js';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiError } from '../../errors.js';
import { projectPath } from '../../paths.js';
import { brandStylesheet, logoSource } from '../../branding.js';
import type { Config } from '../../config.js';
import { adminPage } from '../../ui/admin.js';
import { homePage } from '../../ui/pages.js';
import { browserPage } from '../browser-pages.js';
import { sendFile, staticFiles } from '../static-files.js';
import { wantsPage } from '../errors.js';
import { contentSecurityPolicy, renderPage } from '../pages.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
}

/**
 * The pages' scripts: each module of api/ui/browser/ (the admin console's admin.js and the modules
 * it imports, the pages' passkeys.js), compiled beside this module's output. Their names are read
 * once, so a request names one of them or nothing.
 */
const SCRIPTS_DIR = fileURLToPath(new URL('../../ui/browser/', import.meta.url));
const SCRIPTS = readdirSync(SCRIPTS_DIR).filter((name) => name.endsWith('.js'));
/** The library passkeys.js loads, @simplewebauthn/browser's own bundle. */
const WEBAUTHN_LIBRARY = projectPath('node_modules', '@simplewebauthn', 'browser', 'dist', 'bundle', 'index.umd.min.js');
/** How long a browser may keep the files served here. */
const HOUR = 3600;

/** What the admin UI and the box's root page use. */
export type AdminRouterServices = Pick<Needs, 'config'>;

export function adminRouter(svc: AdminRouterServices): Router {
  const router = new Router();
  const origin = new URL(svc.config.baseUrl).origin;
  const logo = logoSource(svc.config.branding);
  for (const name of SCRIPTS) {
    router.get(browserPage(`/assets/${name}`), (_req, res, next) => {
      sendFile(res, join(SCRIPTS_DIR, name), HOUR, next);
    });
  }
  router.get(browserPage('/assets/simplewebauthn-browser.js'), (_req, res, next) => {
    sendFile(res, WEBAUTHN_LIBRARY, HOUR, next);
  });
  // The box's colours, from its checked branding (api/branding.ts): a stylesheet of the box's own,
  // since the pages' Content-Security-Policy runs no inline style.
  const brandCss = brandStylesheet(svc.config.branding);
  router.get(browserPage('/assets/brand.css'), (_req, res) => {
    res.set('Cache-Control', 'public, max-age=3600').type('text/css').send(brandCss);
  });
  router.use('/assets', staticFiles('/assets', projectPath('api', 'ui', 'assets'), HOUR));
  // The documentation of this release, where the box's answers point (SCIM's documentationUri):
  // the files as they are, Markdown as text/markdown (with nosniff, never rendered as a page), no
  // listing of a folder; a path that climbs out of docs/ or names a dotfile is not found.
  router.use('/docs', staticFiles('/docs', projectPath('docs'), HOUR));
  router.use('/docs', () => {
    throw new ApiError(404, 'not_found', 'no such page of the documentation');
  });
  // The root: a page for people who open the box's address, the way on for programs.
  router.get('/', (req, res) => {
    if (wantsPage(req)) return renderPage(res, 200, homePage(svc.config.box, svc.config.baseUrl));
    res.json({
      box: svc.config.box,
      issuer: svc.config.baseUrl,
      openid_configuration: `${svc.config.baseUrl}/.well-known/openid-configuration`,
      openapi: `${svc.config.baseUrl}/openapi.json`,
      admin: `${svc.config.baseUrl}/admin`,
    });
  });
  router.get(browserPage('/favicon.ico'), (_req, res) => {
    res.status(204).end();
  });
  router.get([browserPage('/admin'), browserPage('/admin/callback')], (_req, res) => {
    res
      .set({
        // The admin UI's script (/assets/admin.js) and its calls to the API; its forms never leave the box.
        'Content-Security-Policy': contentSecurityPolicy({
          'script-src': "'self'",
          'connect-src': `'self' ${origin}`,
          'form-action': "'self'",
          ...(logo ? { 'img-src': `'self' ${logo}` } : {}),
        }),
        'Cache-Control': 'no-store',
      })
      .type('html')
      .send(adminPage(svc.config.box, svc.config.baseUrl, svc.config.branding));
  });
  return router;
}
