// The box's signing keys on its own API, behind its policies as every route is: GET /keys lists
// them (which one signs, which are retired and until when they stay published), POST /keys/rotate
// makes a new key sign and retires the one it replaces (api/credentials/keyring.ts decides; this
// door reads and answers). No answer holds a key's private half. `boxauth keys` calls both.
import { RequestHandler, Router } from '../router.js';
import { ValidationError } from '../../errors.js';
import type { Audit } from '../../audit.js';
import { JWT_ALGS, type JwtAlg } from '../../config.js';
import type { KeyStatus, Keyring } from '../../credentials/keyring.js';
import { actorOf } from '../auth.js';
import { resourceBody } from '../body.js';
import { send } from '../respond.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  keyring: Keyring;
  audit: Audit;
}

/** A key as GET /keys answers it: its public description only (the JWKS has its public half). */
export interface KeyJson {
  kid: string;
  alg: JwtAlg;
  use: 'sig';
  state: KeyStatus['state'];
  signs: KeyStatus['signs'];
  external: boolean;
  created_at: string;
  retired_at: string | null;
  rotates_at: string | null;
  published_until: string | null;
}

const iso = (date: Date | null): string | null => date?.toISOString() ?? null;

function keyJson(key: KeyStatus): KeyJson {
  return {
    kid: key.kid,
    alg: key.alg,
    use: 'sig',
    state: key.state,
    signs: key.signs,
    external: key.external,
    created_at: key.createdAt.toISOString(),
    retired_at: iso(key.retiredAt),
    rotates_at: iso(key.rotatesAt),
    published_until: iso(key.publishedUntil),
  };
}

/** The algorithm a rotation names: absent (the access tokens' algorithm), or one the box signs with. */
function rotatedAlg(body: unknown): JwtAlg | undefined {
  if (body === undefined) return undefined;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw ValidationError.field(body, 'form', 'send {} or {"alg": …}');
  const unknown = Object.keys(body).filter((k) => k !== 'alg');
  if (unknown.length) throw ValidationError.field(body, unknown[0]!, 'is not a field of a rotation (only alg)');
  const { alg } = body as { alg?: unknown };
  if (alg === undefined) return undefined;
  if (typeof alg !== 'string' || !(JWT_ALGS as readonly string[]).includes(alg))
    throw ValidationError.field(body, 'alg', `must be one of ${JWT_ALGS.join(', ')}`);
  return alg as JwtAlg;
}

/** What the keys' routes use: the keyring, and the audit of each rotation. */
export type KeyRouterServices = Pick<Needs, 'audit' | 'keyring'>;

export function keyRouter(svc: KeyRouterServices, guard: RequestHandler): Router {
  const router = new Router();

  router.get('/keys', guard, async (req, res) => {
    send(req, res, 200, { keys: (await svc.keyring.status()).map(keyJson) });
  });

  router.post('/keys/rotate', ...resourceBody, guard, async (req, res) => {
    const rotation = await svc.keyring.rotate(rotatedAlg(req.body));
    svc.audit.record({ event: 'signing_key', action: 'rotated', ...rotation, by: actorOf(req.principal!) });
    const keys = (await svc.keyring.status()).map(keyJson);
    send(req, res, 200, { rotated: rotation, keys });
  });

  return router;
}
