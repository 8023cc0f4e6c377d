// Client secrets at rest are argon2id hashes: a copy of the database does not
// yield them, even when a person chose a weak one. argon2 is slow on purpose, too
// slow for a token endpoint answering thousands of requests a second, so each
// process remembers secrets it has verified, as SHA-256 digests only, bound to
// the hash they were checked against: a changed secret (new hash) is checked
// again with argon2, and a wrong secret never matches a remembered digest.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import argon2 from 'argon2';

// OWASP's recommended minimum for argon2id: 19 MiB, 2 iterations, 1 lane.
const HASH_OPTIONS = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;

// Each argon2 run takes 19 MiB and a core for tens of milliseconds. Two at a
// time per process keep a burst (say, many sign-ups at once) from holding four
// times that memory in libuv's threads without finishing any sooner.
const MAX_CONCURRENT = 2;
let running = 0;
const waiting: (() => void)[] = [];

async function limited<T>(work: () => Promise<T>): Promise<T> {
  // A finished run hands its slot straight to the next waiter (running stays
  // as it is), so a caller arriving in between cannot take it as well.
  if (running < MAX_CONCURRENT) running++;
  else await new Promise<void>((resolve) => waiting.push(resolve));
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

export function hashSecret(secret: string): Promise<string> {
  return limited(() => argon2.hash(secret, HASH_OPTIONS));
}

/** argon2 verification of a secret or password against its stored hash; false for a malformed hash. */
export function verifyHash(hash: string, presented: string): Promise<boolean> {
  return limited(() => argon2.verify(hash, presented)).catch(() => false);
}

export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

export class SecretVerifier {
  private verified = new Map<string, { hash: string; digest: Buffer }>();

  constructor(private readonly maxEntries = 10_000) {}

  async verify(clientId: string, hash: string, presented: string): Promise<boolean> {
    const d = digest(presented);
    const known = this.verified.get(clientId);
    if (known && known.hash === hash) {
      // A remembered digest matches only the very secret that passed argon2.
      if (timingSafeEqual(known.digest, d)) return true;
    }
    const ok = await verifyHash(hash, presented);
    if (ok) this.remember(clientId, hash, presented);
    return ok;
  }

  /** Records that `secret` matches `hash` without running argon2: for a hash just made from it. */
  remember(clientId: string, hash: string, secret: string): void {
    if (this.verified.size >= this.maxEntries) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(clientId, { hash, digest: digest(secret) });
  }
}
