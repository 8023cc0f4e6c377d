// The OAuth endpoints: token, introspection, revocation, and the discovery documents.
import { type Router, type Response } from 'express';
import { introspect, revoke } from '../../oauth/introspection.js';
import { grants, tokenRequest } from '../../oauth/token-endpoint.js';
import type { Services } from '../../services.js';
import { oauthBody } from '../body.js';
import { NO_STORE } from '../headers.js';
import { strictRouter } from '../router.js';

// Token and introspection requests normally take the fast path
// (../oauth-fast-path.ts); these routes answer the unusual ones.
const noStore = (res: Response): Response => res.set(NO_STORE);

export function oauthRouter(svc: Services): Router {
  const router = strictRouter();

  router.post('/auth/token', ...oauthBody, async (req, res) => {
    noStore(res).json(await tokenRequest(svc, req.headers.authorization, req.body));
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
