// Where an AuthZEN evaluation lands at an App (docs/guides/guard-your-apps.md, "What the app's
// policies see"): the action's name is the method; resource.properties.path (default
// /<type>/<id>) and .host (default the host of the App's first url) are the path and host; the
// resource is what the PEP sent under what the App declares of it. One reading, for the PDP's
// door (api/http/routes/authzen.ts) and for `boxauth policy test` (api/cli/policy-verdicts.ts).
import type { App } from '../types.js';
import { hostOf } from './apps.js';

/** An AuthZEN resource (§5.2): type and id REQUIRED, properties OPTIONAL. */
export type AuthzenResource = {
  type: string;
  id: string;
  properties?: Record<string, unknown>;
};

/**
 * The resource as the App's policies see it: what the PEP sent, its properties under those the
 * App declares for the same type and id (App.resources), key by key — what the box knows of a
 * resource is not the PEP's to change, and a PEP that names a resource by type and id alone
 * (as Resource Search answers it) is decided as one that sent its properties.
 */
export function resourceOf(app: App, sent: AuthzenResource): AuthzenResource {
  const declared = app.resources?.find((r) => r.type === sent.type && r.id === sent.id);
  if (!declared?.properties) return sent;
  return { ...sent, properties: { ...sent.properties, ...declared.properties } };
}

/** The gateway request an evaluation of `action` on `sent` at `app` is decided as. */
export function authzenTarget(
  app: App,
  action: { name: string },
  sent: AuthzenResource,
): { method: string; host: string; path: string; resource: AuthzenResource } {
  const resource = resourceOf(app, sent);
  const props = resource.properties ?? {};
  return {
    method: action.name,
    host: typeof props.host === 'string' ? props.host : hostOf(app.urls[0]!),
    path: typeof props.path === 'string' ? props.path : `/${encodeURIComponent(resource.type)}/${encodeURIComponent(resource.id)}`,
    resource,
  };
}
