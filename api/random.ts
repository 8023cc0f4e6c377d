// Random bytes for tokens and ids on the hot path. Each randomBytes() call is a
// trip into OpenSSL's generator (about 2 µs here, more under load), so bytes are
// drawn 8 KiB at a time from the same CSPRNG and handed out once each, in order:
// what node:crypto's randomUUID() does for the same reason. The pool is
// per-process memory; a byte is never handed out twice.
import { randomFillSync } from 'node:crypto';

const POOL_SIZE = 8192;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

/** `n` (≤ 256) fresh random bytes, as a new Buffer. */
export function randomBytesPooled(n: number): Buffer {
  if (n > 256) throw new RangeError('randomBytesPooled is for token-sized values');
  if (offset + n > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const out = Buffer.from(pool.subarray(offset, offset + n));
  pool.fill(0, offset, offset + n); // bytes handed out do not linger in the pool
  offset += n;
  return out;
}
