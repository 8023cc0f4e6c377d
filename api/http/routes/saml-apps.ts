// GET /Client/<id>/$saml: a SAML app as the admin console shows it (api/saml/app-status.ts): what
// its metadata says of it, where the metadata comes from and what the box last made of it at its
// URL, and the box's own values an admin pastes into the app. Guarded as a read of the Client (its
// route's policy); named as an operation on the record, as IdentityProvider/<id>/$check is.
import { RequestHandler, Router } from '../router.js';
import { notFound } from '../../errors.js';
import type { RecordCache } from '../../cache/record-cache.js';
import type { Config } from '../../config.js';
import type { Pool } from '../../db/pool.js';
import { samlAppView } from '../../saml/app-status.js';
import type { Stored } from '../../store/resources.js';
import type { Client } from '../../types.js';
import { send } from '../respond.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  pool: Pool;
  clients: RecordCache<Stored<Client>>;
}

export type SamlAppRouterServices = Pick<Needs, 'config' | 'pool' | 'clients'>;

export function samlAppRouter(svc: SamlAppRouterServices, guard: RequestHandler): Router {
  const router = new Router();
  router.get('/Client/:id/$saml', guard, async (req, res) => {
    const id = req.params.id;
    const client = (await svc.clients.get(id))?.resource;
    if (!client?.saml) throw notFound(`SAML app "${id}" (a Client with saml)`);
    send(req, res, 200, await samlAppView(svc.pool, client, svc.config.baseUrl));
  });
  return router;
}
