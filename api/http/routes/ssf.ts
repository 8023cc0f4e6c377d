// The Shared Signals transmitter's doors (api/ssf/ decides): its metadata, public as every
// discovery document (SSF 1.0 §7.2); the stream management API (§8.1), behind the box's policies as
// every API route, for a receiver, a client calling with its own token (client credentials) that
// carries SSF's scopes (ssf.read to read, ssf.manage to change, §8.1: "ssf.manage … ssf.read"); and
// the poll endpoint of its poll streams (RFC 8936).
import { Request, RequestHandler, Response, Router } from '../router.js';
import { resourceError } from '../../credentials/errors.js';
import {
  addSubject,
  changeStatus,
  changeStream,
  createStream,
  deleteStream,
  poll,
  readStatus,
  readStreams,
  removeSubject,
  requestVerification,
  type ManagementNeeds,
} from '../../ssf/management.js';
import { SSF_PATHS, transmitterMetadata } from '../../ssf/metadata.js';
import { ssfBody } from '../body.js';

/** What the SSF routers use of the process's services. */
export type SsfRouterServices = ManagementNeeds;

/** GET /.well-known/ssf-configuration (SSF 1.0 §7.2), public. */
export function ssfMetadataRouter(svc: Pick<ManagementNeeds, 'config'>): Router {
  const router = new Router();
  router.get('/.well-known/ssf-configuration', (_req, res) => {
    res.set('Cache-Control', 'public, max-age=60').json(transmitterMetadata(svc.config.baseUrl));
  });
  return router;
}

type Scope = 'ssf.read' | 'ssf.manage';

/**
 * The receiver a request comes from: the client of a token that speaks for no person, carrying
 * `scope` (ssf.manage also reads). A person's token is no receiver's.
 */
function receiverOf(req: Request, scope: Scope): string {
  const principal = req.principal!;
  if (principal.user) throw resourceError('access_denied', 'a receiver calls with its own token (client credentials), not a person’s');
  const scopes = (principal.session.scope ?? '').split(' ');
  const carries = scopes.includes(scope) || (scope === 'ssf.read' && scopes.includes('ssf.manage'));
  if (!carries) throw resourceError('insufficient_scope', `this request needs a token with scope ${scope}`);
  return principal.session.clientId;
}

type Handler = (req: Request, res: Response, receiver: string) => Promise<void>;

const as =
  (scope: Scope, handle: Handler): RequestHandler =>
  (req, res, next) => {
    handle(req, res, receiverOf(req, scope)).catch(next);
  };

const query = (req: Request): unknown => req.query.stream_id;

/** The stream management API and the poll endpoint, each route behind `guard` (after its body). */
export function ssfRouter(svc: SsfRouterServices, guard: RequestHandler): Router {
  const router = new Router();
  const { configuration, status, addSubject: add, removeSubject: remove, verification } = SSF_PATHS;

  router.get(
    configuration,
    guard,
    as('ssf.read', async (req, res, receiver) => void res.json(await readStreams(svc, receiver, query(req)))),
  );
  router.post(
    configuration,
    ssfBody,
    guard,
    as('ssf.manage', async (req, res, receiver) => void res.status(201).json(await createStream(svc, receiver, req.body))),
  );
  router.patch(
    configuration,
    ssfBody,
    guard,
    as('ssf.manage', async (req, res, receiver) => void res.json(await changeStream(svc, receiver, req.body, false))),
  );
  router.put(
    configuration,
    ssfBody,
    guard,
    as('ssf.manage', async (req, res, receiver) => void res.json(await changeStream(svc, receiver, req.body, true))),
  );
  router.delete(
    configuration,
    guard,
    as('ssf.manage', async (req, res, receiver) => {
      await deleteStream(svc, receiver, query(req));
      res.status(204).end();
    }),
  );

  router.get(
    status,
    guard,
    as('ssf.read', async (req, res, receiver) => void res.json(await readStatus(svc, receiver, query(req)))),
  );
  router.post(
    status,
    ssfBody,
    guard,
    as('ssf.manage', async (req, res, receiver) => void res.json(await changeStatus(svc, receiver, req.body))),
  );

  router.post(
    add,
    ssfBody,
    guard,
    as('ssf.manage', async (req, res, receiver) => {
      await addSubject(svc, receiver, req.body);
      res.status(200).end();
    }),
  );
  router.post(
    remove,
    ssfBody,
    guard,
    as('ssf.manage', async (req, res, receiver) => {
      await removeSubject(svc, receiver, req.body);
      res.status(204).end();
    }),
  );
  router.post(
    verification,
    ssfBody,
    guard,
    as('ssf.manage', async (req, res, receiver) => {
      await requestVerification(svc, receiver, req.body);
      res.status(204).end();
    }),
  );

  // RFC 8936 §2: the poll endpoint the stream's configuration names; reading SETs needs ssf.read.
  router.post(
    '/ssf/poll/:id',
    ssfBody,
    guard,
    as('ssf.read', async (req, res, receiver) => {
      res.json(await poll(svc, receiver, (req.params as Record<string, string>).id!, req.body));
    }),
  );
  return router;
}
