// boxauth as `make bench` runs it (one worker per core, its defaults), with the
// bench's two client_credentials clients: opaque tokens and ES256 JWTs.
import fs from 'node:fs';
import os from 'node:os';
import { Box } from '../../support/box.js';
import { LOAD } from '../measure.js';
import { tokenClients } from '../scenarios.js';
import { clientCredentials, expectToken, type Target } from './target.js';

const PER_TOKEN =
  'client secret checked with argon2id once per client and process, then its SHA-256 digest compared in constant time; ' +
  'a session row per token, inserted and committed (group commit) before the answer';

export async function startBoxauth(databaseUrl: string): Promise<{ targets: Target[]; stop(): Promise<void> }> {
  const box = await Box.start({
    databaseUrl,
    dataDir: fs.mkdtempSync(`${os.tmpdir()}/boxauth-bench-peers-`),
    env: { BOXAUTH_WORKERS: String(LOAD.workers) },
  });
  try {
    const { opaque, jwt } = await tokenClients(box);
    const target = (key: string, title: string, client: { id: string; secret: string }, isJwt: boolean): Target => ({
      key,
      title,
      baseUrl: box.url,
      pid: box.process!.pid!,
      request: clientCredentials('/auth/token', client),
      perToken: `${PER_TOKEN}; ${isJwt ? 'ES256 JWT' : 'opaque token (its SHA-256 digest stored)'}`,
      check: (body) => expectToken(body, isJwt),
      stop: async () => undefined, // the box serves both; stopped once, below
    });
    return {
      targets: [
        target('boxauth_opaque', `boxauth, opaque, ${LOAD.workers} workers`, opaque, false),
        target('boxauth_jwt', `boxauth, JWT ES256, ${LOAD.workers} workers`, jwt, true),
      ],
      stop: () => box.stop(),
    };
  } catch (err) {
    await box.stop();
    throw err;
  }
}
