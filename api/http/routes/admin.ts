// The admin UI (/admin) and the static assets of the pages.
import express, { type Router } from 'express';
import { projectPath } from '../../paths.js';
import type { Services } from '../../services.js';
import { adminPage } from '../../ui/admin.js';
import { strictRouter } from '../router.js';

export function adminRouter(svc: Services): Router {
  const router = strictRouter();
  const origin = new URL(svc.config.baseUrl).origin;
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
