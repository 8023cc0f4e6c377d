// POST /IdentityProvider/<id>/$check: a provider tried before people sign in through it
// (api/people/upstream/check.ts). Named as an operation on the record (FHIR's `$` operations,
// whose search and Bundle shapes the REST API follows), so that no record id can be taken for it.
// Guarded as a write of an IdentityProvider: the route's policy, and then only a writer that allow
// policies let do everything on the box's API (api/policy/writers.ts) — a check makes the box
// present the provider's client secret or bind password, and says how the provider answered.
import { RequestHandler, Router } from '../router.js';
import { notFound } from '../../errors.js';
import { resourceError } from '../../credentials/errors.js';
import type { Policies } from '../../policy/evaluate.js';
import { checkStoredProvider, type CheckServices } from '../../people/upstream/check.js';
import type { Logger } from '../../log.js';
import { writerOf } from '../auth.js';
import { send } from '../respond.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  policies: Policies;
  log: Logger;
}

export type ProviderCheckRouterServices = CheckServices & Needs;

export function providerCheckRouter(svc: ProviderCheckRouterServices, guard: RequestHandler): Router {
  const router = new Router();
  router.post('/IdentityProvider/:id/$check', guard, async (req, res) => {
    const id = req.params.id;
    if (!(await writerOf(svc, req.principal!)).unconditional)
      throw resourceError(
        'access_denied',
        `checking IdentityProvider "${id}" uses its secret: only a writer that allow policies let do everything on the box's API may`,
      );
    const answer = await checkStoredProvider(svc, id);
    if (!answer) throw notFound(`IdentityProvider "${id}"`);
    svc.log.info(
      { provider: id, ok: answer.ok, failed: answer.checks.filter((c) => !c.ok).map((c) => c.check) },
      'identity provider checked',
    );
    send(req, res, 200, answer);
  });
  return router;
}
