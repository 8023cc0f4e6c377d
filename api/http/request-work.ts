// Work a request queues for itself alone is dropped once its client has gone: an argon2 run still
// waiting for a slot when the connection closes leaves the queue and never runs (Argon2Gate.until).
// Else a client sending requests and leaving (wrk ending its warm-up, a bot, a stranger) would have
// the box hash for no one, and fill the queue that the next request finds full.
import type { Argon2, Argon2Gate } from '../credentials/secrets.js';
import type { Response } from './router.js';

/** `svc` whose argon2 runs are this request's: those still waiting when its client goes are dropped. */
export function forThisRequest<S extends { argon2: Argon2Gate }>(svc: S, res: Response): Omit<S, 'argon2'> & { argon2: Argon2 } {
  return { ...svc, argon2: svc.argon2.until(res.gone) };
}
