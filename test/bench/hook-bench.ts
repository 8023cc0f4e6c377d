// make bench's rows of a token with a Hook (docs/guides/hooks.md): the cc_jwt row's request, by a
// client whose token a Hook is asked about, a Go hook in another process (test/hooks/go) answering
// after 5 ms or after 50 ms. Each Hook exists only while its row runs (written before, deleted
// after): every other row's tokens are asked of no hook, as on a box without any.
import { randomBytes } from 'node:crypto';
import type { Box, JsonResponse } from '../support/box.js';
import { HookServer } from '../support/hook-servers.js';
import { testCa, type TestCa } from '../support/tls.js';

/** What a hook row needs: the hook's server, and the box's settings that let it reach it. */
export interface BenchHooks {
  server: HookServer;
  ca: TestCa;
  secret: string;
  /** BOXAUTH_NOTICE_ALLOWED_ADDRESSES: the hook is at 127.0.0.1, as an administrator allows a cluster's own range. */
  allowed: string;
}

export async function startBenchHooks(): Promise<BenchHooks> {
  const ca = testCa();
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  return { server: await HookServer.start('go', secret, ca), ca, secret, allowed: '127.0.0.1/32' };
}

/** The Hook of a row: asked at tokenIssuing for `client` only, its answer after `ms`, calls at once enough for the bench's connections. */
export function hookRow(box: Box, hooks: BenchHooks, client: string, ms: number): { before(): Promise<void>; after(): Promise<void> } {
  const id = `bench-hook-${ms}ms`;
  return {
    async before() {
      const token = await box.rootToken();
      const res = await box.json(
        'PUT',
        `/Hook/${id}`,
        {
          moments: ['tokenIssuing'],
          url: `${hooks.server.url}/slow/${ms}`,
          caBundle: Buffer.from(hooks.ca.pem).toString('base64'),
          secret: hooks.secret,
          matchConditions: [{ name: 'this-client', expression: `request.client.id == '${client}'` }],
          maxInFlight: 256,
          timeoutSeconds: 5,
        },
        token,
      );
      if (res.status >= 300) throw new Error(`PUT /Hook/${id}: ${res.status} ${res.text}`);
    },
    async after() {
      await box.json('DELETE', `/Hook/${id}`, undefined, await box.rootToken());
    },
  };
}

/** A token the hook was asked about: a JWT carrying the claim it added. */
export function hookedJwt(res: JsonResponse): void {
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${res.text.slice(0, 300)}`);
  const payload = JSON.parse(Buffer.from(String(res.body.access_token).split('.')[1] ?? '', 'base64url').toString()) as Record<
    string,
    unknown
  >;
  if (payload.slow !== true) throw new Error(`the hook's claim is not in the token: ${JSON.stringify(payload)}`);
}
