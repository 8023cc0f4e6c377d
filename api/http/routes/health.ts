// Liveness and readiness. (Metrics are served on a port of their own: api/metrics.ts.)
import { errorMessage } from '../../errors.js';
import { Router } from '../router.js';
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  log: Logger;
}

/** What liveness and readiness use. */
export type HealthRouterServices = Pick<Needs, 'config' | 'log'>;

/**
 * What readiness asks the process: whether it is shutting down, and whether the database has
 * every migration this release needs (the composition root asks it: a door holds no connection).
 */
export interface Readiness {
  draining: () => boolean;
  migrationsDone: () => Promise<boolean>;
}

export function healthRouter(svc: HealthRouterServices, { draining, migrationsDone }: Readiness): Router {
  const router = new Router();

  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok', box: svc.config.box });
  });

  router.get('/readyz', async (_req, res) => {
    const problems: string[] = [];
    if (draining()) problems.push('shutting down');
    try {
      if (!(await migrationsDone())) problems.push('migrations pending');
    } catch (err) {
      // The public port says only what an orchestrator needs; the error (host, port, role, database) goes to the log.
      svc.log.warn({ err: errorMessage(err) }, 'readiness: database unreachable');
      problems.push('database unreachable');
    }
    res.status(problems.length ? 503 : 200).json({ status: problems.length ? 'unavailable' : 'ready', problems });
  });

  return router;
}
