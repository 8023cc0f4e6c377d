// Second factors put in place for a test without their enrolment pages: straight through
// api/store/factors.ts, with bytes no authenticator made (nothing signs in with them).
import { createPool } from '../../api/db/pool.js';
import { addPasskey } from '../../api/store/factors.js';

/** Gives user `userId` of the box on `databaseUrl` a passkey named `name`. */
export async function addDummyPasskey(databaseUrl: string, userId: number, name: string): Promise<void> {
  const pool = createPool(databaseUrl, 1);
  try {
    await addPasskey(pool, userId, {
      name,
      credentialId: Buffer.from(`dummy-credential-${userId}-${name}`),
      publicKey: Buffer.from('dummy-public-key'),
      signCount: 0,
      transports: ['internal'],
      deviceType: 'multiDevice',
      backedUp: true,
    });
  } finally {
    await pool.end();
  }
}
