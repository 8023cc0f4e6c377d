// The OAuth endpoints: token, introspection, revocation, and the discovery documents.
import { Router, type Response } from 'express';
import { ApiError } from '../../errors.js';
import { introspect, revoke } from '../../oauth/introspection.js';
import { grants, tokenRequest } from '../../oauth/token-endpoint.js';
import type { Services } from '../../services.js';
import { oauthBody } from '../body.js';

// RFC 6749 §5.1: token responses must not be cached.
function noStore(res: Response): Response {
  return res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache' });
}

export function oauthRouter(svc: Services): Router {
  const router = Router();

  router.post('/auth/token', ...oauthBody, async (req, res) => {
    try {
      const response = await tokenRequest(svc, req.headers.authorization, req.body);
      svc.metrics.tokens.inc({ grant: (req.body as { grant_type?: string }).grant_type });
      noStore(res).json(response);
    } catch (err) {
      if (err instanceof ApiError) svc.metrics.tokenErrors.inc({ error: err.code });
      throw err;
    }
  });

  router.post('/auth/introspect', ...oauthBody, async (req, res) => {
    noStore(res).json(await introspect(svc, req.headers.authorization, req.body));
  });

  router.post('/auth/revoke', ...oauthBody, async (req, res) => {
    await revoke(svc, req.headers.authorization, req.body);
    noStore(res).status(200).json({});
  });

  router.get('/.well-known/jwks.json', (_req, res) => {
    res.set('Cache-Control', 'public, max-age=60').json(svc.keyring.jwks());
  });

  router.get('/.well-known/oauth-authorization-server', (_req, res) => {
    const base = svc.config.baseUrl;
    res.set('Cache-Control', 'public, max-age=300').json({
      issuer: base,
      authorization_endpoint: `${base}/auth/authorize`,
      token_endpoint: `${base}/auth/token`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      introspection_endpoint: `${base}/auth/introspect`,
      revocation_endpoint: `${base}/auth/revoke`,
      grant_types_supported: [...grants.keys()],
      response_types_supported: ['token', 'code'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      code_challenge_methods_supported: ['S256'],
    });
  });

  return router;
}
