// A person's identity at an upstream provider, put in place for a test without a sign-in at the
// provider: straight through api/store/identity-providers.ts, as a first sign-in there links it.
import { createPool, withTransaction } from '../../api/db/pool.js';
import { linkUpstreamIdentity } from '../../api/store/identity-providers.js';

/** Links `subject` at `provider` (an IdentityProvider of the box on `databaseUrl`) to user `userId`. */
export async function linkDummyIdentity(
  databaseUrl: string,
  userId: number,
  provider: string,
  subject: string,
  email?: string,
): Promise<void> {
  const pool = createPool(databaseUrl, 1);
  try {
    const linked = await withTransaction(pool, (tx) => linkUpstreamIdentity(tx, { provider, subject, userId, email }));
    if (!linked) throw new Error(`${provider}/${subject} is linked to someone already`);
  } finally {
    await pool.end();
  }
}
