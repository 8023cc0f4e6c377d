// The express app of one box. Reading order of a request: logging and security
// headers; the public endpoints (OAuth, discovery, health, sign-out); then, for
// everything else, authentication and authorization before the resource routers.
import express, { type Express, type RequestHandler } from 'express';
import { ApiError } from '../errors.js';
import { redactUrl } from '../log.js';
import type { Services } from '../services.js';
import { authenticate, authorize } from './auth.js';
import { errorHandler } from './errors.js';
import { adminRouter } from './routes/admin.js';
import { browserRouter } from './routes/browser.js';
import { healthRouter } from './routes/health.js';
import { oauthRouter } from './routes/oauth.js';
import { peopleRouter } from './routes/people.js';
import { resourceRouter } from './routes/resources.js';
import { sessionRouter, signOut } from './routes/sessions.js';

function requestLog(svc: Services): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = req.route ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
      svc.metrics.requests.inc({ method: req.method, route, status: res.statusCode });
      svc.metrics.duration.observe({ method: req.method, route }, seconds);
      svc.log.info({ method: req.method, url: redactUrl(req.originalUrl), status: res.statusCode, ms: Math.round(seconds * 1e4) / 10 }, 'request');
    });
    next();
  };
}

// Bearer tokens, not cookies, authorize API calls, so any origin may call the API
// and the OAuth endpoints from a browser app (no credentials are ever allowed).
const cors: RequestHandler = (req, res, next) => {
  res.set('Access-Control-Allow-Origin', '*');
  if (req.method === 'OPTIONS' && req.headers['access-control-request-method']) {
    res.set({
      'Access-Control-Allow-Methods': 'GET, POST, PUT, DELETE',
      'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept',
      'Access-Control-Max-Age': '600',
    }).status(204).end();
    return;
  }
  next();
};

const securityHeaders: RequestHandler = (_req, res, next) => {
  res.set({
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Content-Security-Policy': "frame-ancestors 'none'",
  });
  next();
};

export interface AppOptions {
  draining: () => boolean;
}

export function createApp(svc: Services, options: AppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', 'loopback, linklocal, uniquelocal');
  app.use(requestLog(svc), securityHeaders, cors);

  app.use(healthRouter(svc, options.draining));
  app.use(oauthRouter(svc));
  app.delete('/Session', signOut(svc));
  app.use(browserRouter(svc), adminRouter(svc));

  const guarded = express.Router();
  guarded.use(authenticate(svc), authorize(svc));
  guarded.use(resourceRouter(svc, 'Client'), resourceRouter(svc, 'AccessPolicy'), sessionRouter(svc), peopleRouter(svc));
  app.use(guarded);

  app.use(() => {
    throw new ApiError(404, 'not_found', 'no such endpoint');
  });
  app.use(errorHandler(svc.log));
  return app;
}
