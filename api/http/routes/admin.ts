// The admin UI (/admin) and the static assets of the pages.
import express, { type Router } from 'express';
import { fileURLToPath } from 'node:url';
import { projectPath } from '../../paths.js';
import type { Services } from '../../services.js';
import { adminPage } from '../../ui/admin.js';
import { strictRouter } from '../router.js';

const ADMIN_SCRIPT = fileURLToPath(new URL('../../ui/browser/admin.js', import.meta.url));

export function adminRouter(svc: Services): Router {
  const router = strictRouter();
  const origin = new URL(svc.config.baseUrl).origin;
  // The admin UI's script is TypeScript (api/ui/browser/admin.ts), compiled beside this module's output.
  router.get('/assets/admin.js', (_req, res) => {
    res.sendFile(ADMIN_SCRIPT, { maxAge: '1h', headers: { 'Content-Type': 'text/javascript; charset=utf-8' } });
  });
  router.use('/assets', express.static(projectPath('api', 'ui', 'assets'), { maxAge: '1h', index: false }));
  router.get('/favicon.ico', (_req, res) => {
    res.status(204).end();
  });
  router.get(['/admin', '/admin/callback'], (_req, res) => {
    res
      .set({
        'Content-Security-Policy': `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self' ${origin}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`,
        'Cache-Control': 'no-store',
      })
      .type('html')
      .send(adminPage(svc.config.box, svc.config.baseUrl));
  });
  return router;
}
