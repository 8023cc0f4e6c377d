// A token for a user, as the browser flows issue them, minted straight into the
// box's database (tests of user and group policies need one before those flows run).
import pg from 'pg';
import { generateKeyPair, signingKey } from '../../api/credentials/jwt.js';
import { mint } from '../../api/credentials/tokens.js';
import { insertSessions } from '../../api/store/sessions.js';
import type { Box } from './box.js';

/** `audience`: the token is for that audience (RFC 8707), as a sign-in at an app makes them; else for the box. */
export async function userToken(box: Box, userId: number, clientId = 'root', audience?: string, scope?: string): Promise<string> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const { session, response } = mint(
    {
      type: 'authorization_code',
      origin: 'authorization_code',
      userId,
      refresh: false,
      ...(audience ? { audience } : {}),
      ...(scope ? { scope } : {}),
      settings: {},
      client: { resourceType: 'Client', id: clientId, grant_types: ['authorization_code'] },
    },
    box.url,
    signingKey('unused', 'ES256', privateKey, publicKey),
  );
  const db = new pg.Client({ connectionString: box.databaseUrl });
  await db.connect();
  try {
    await insertSessions(db, [session]);
  } finally {
    await db.end();
  }
  return response.access_token;
}
