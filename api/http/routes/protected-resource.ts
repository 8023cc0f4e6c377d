// Protected Resource Metadata (RFC 9728) of each App, on the App's own host: the gateway routes
// <app url>/.well-known/oauth-protected-resource[/<audience path>] to the box with the app's
// Host, as it routes /.boxauth/ (docs/guides/guard-your-apps.md); on the box's own host, the
// box's own. Which document a host and path name: api/decision/resource-metadata.ts.
import { Router } from '../router.js';
import { ApiError } from '../../errors.js';
import { METADATA_PATH, metadataAt, type MetadataServices } from '../../decision/resource-metadata.js';

/** The well-known path and any suffix under it (RFC 9728 §3.1), as sent: never decoded, so one spelling names one document. */
const UNDER_METADATA_PATH = new RegExp(`^${METADATA_PATH.replace(/[.]/g, '\\.')}(?:/.*)?$`);

export type ProtectedResourceRouterServices = MetadataServices;

export function protectedResourceRouter(svc: ProtectedResourceRouterServices): Router {
  const router = new Router();
  router.get(UNDER_METADATA_PATH, async (req, res) => {
    const document = await metadataAt(svc, req.headers.host ?? '', req.path);
    if (!document) throw new ApiError(404, 'not_found', `no protected resource's metadata is at ${req.path} of this host`);
    // §3.2 leaves caching to HTTP; an App's scopes follow its policies, so a minute, as the box's other metadata.
    res.set({ 'Cache-Control': 'public, max-age=60', Vary: 'Host' }).json(document);
  });
  return router;
}
