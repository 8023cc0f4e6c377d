// Load on a box that remembers what the box acknowledged, and the check that all of it is
// still there: what the failover tests (test/integration/failover.test.ts) and the failover
// row of `make bench` (test/bench/failover-bench.ts) assert and count.
//
// Acknowledged means answered with success: a token issued (200), a refresh token rotated
// (200: the new one is the chain's), a session closed (DELETE /Session, /auth/revoke: 200), a
// Client, an AccessPolicy or a user written (201/200). Anything else the box may answer is a
// 503 temporarily_unavailable with Retry-After; every other answer, or none within
// ANSWER_WITHIN_MS, is wrong. After an answer that is not a success, the outcome is unknown
// (it may have committed): a refresh chain starts over rather than reuse a token that may
// have been rotated, and nothing unknown is remembered or checked.
import { Box, basic, type JsonResponse } from './box.js';

/** A request the box does not answer within this long is a hang (the box's own deadlines are seconds). */
export const ANSWER_WITHIN_MS = 10_000;

export const WORKER = { id: 'worker', secret: 'worker-secret' };

/** The clients the load uses: make them once per box's database, before load(). */
export async function prepareLoad(box: Box): Promise<void> {
  await box.addClient(
    WORKER.id,
    { auth: { client_credentials: { refresh_token: true, refresh_token_rotation: true } } },
    { secret: WORKER.secret },
  );
}

export class Ledger {
  readonly tokens: string[] = [];
  /** The last refresh token of each chain, never used after it was acknowledged. */
  readonly refreshTokens: string[] = [];
  /** Access tokens whose sessions were closed. */
  readonly closed: string[] = [];
  readonly clients: string[] = [];
  readonly policies: string[] = [];
  readonly users: string[] = [];

  get size(): number {
    return (
      this.tokens.length + this.refreshTokens.length + this.closed.length + this.clients.length + this.policies.length + this.users.length
    );
  }
}

export interface Load {
  /** Answers that were neither a success nor the documented 503 (or no answer in time). */
  wrong: string[];
  answered(): number;
  /** When each box last answered 200, ms since the epoch. */
  lastSuccess(): number;
  stop(): Promise<void>;
}

const unavailable = (res: JsonResponse): boolean =>
  res.status === 503 && res.body?.error === 'temporarily_unavailable' && res.headers.get('retry-after') === '5';

/** `request`, or an error once ANSWER_WITHIN_MS has passed without an answer. */
async function inTime<T>(request: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ANSWER_WITHIN_MS} ms`)), ANSWER_WITHIN_MS);
  });
  try {
    return await Promise.race([request, late]);
  } finally {
    clearTimeout(timer);
  }
}

let serial = 0;

/**
 * Loops on `box` until stop(): token issues (`issuers` of them at once), a refresh chain with
 * rotation, sign-outs, revocations, and Client, AccessPolicy and user writes through `root`
 * (a token of the root client that must stay good: the box's own, held in memory or not).
 */
export function load(box: Box, root: string, ledger: Ledger, issuers = 3): Load {
  let running = true;
  let answered = 0;
  let lastSuccess = 0;
  const wrong: string[] = [];
  const worker = { Authorization: basic(WORKER.id, WORKER.secret) };
  const succeeded = (what: string, res: JsonResponse, ok = [200]): boolean => {
    answered++;
    if (ok.includes(res.status)) {
      lastSuccess = Date.now();
      return true;
    }
    if (!unavailable(res)) wrong.push(`${what}: ${res.status} ${res.text.slice(0, 200)}`);
    return false;
  };
  const token = () => box.form('/auth/token', { grant_type: 'client_credentials' }, worker);
  const loop = async (step: () => Promise<void>): Promise<void> => {
    while (running) {
      try {
        await inTime(step());
      } catch (err) {
        wrong.push(`no answer: ${(err as Error).message}`);
      }
    }
  };
  let refresh: string | undefined;
  const steps = [
    ...Array.from({ length: issuers }, () => async () => {
      const res = await token();
      if (succeeded('token', res)) ledger.tokens.push(res.body.access_token as string);
    }),
    async () => {
      const res = refresh ? await box.form('/auth/token', { grant_type: 'refresh_token', refresh_token: refresh }, worker) : await token();
      const previous = refresh;
      refresh = succeeded('refresh', res) ? (res.body.refresh_token as string) : undefined;
      // Used: rotated, or its fate unknown; either way no longer one to check.
      if (previous) ledger.refreshTokens.splice(ledger.refreshTokens.indexOf(previous), 1);
      if (refresh) ledger.refreshTokens.push(refresh);
    },
    async () => {
      const issued = await token();
      if (!succeeded('token to sign out', issued)) return;
      const t = issued.body.access_token as string;
      if (succeeded('sign-out', await box.json('DELETE', '/Session', undefined, t))) ledger.closed.push(t);
    },
    async () => {
      const issued = await token();
      if (!succeeded('token to revoke', issued)) return;
      const t = issued.body.access_token as string;
      if (succeeded('revoke', await box.form('/auth/revoke', { token: t }, worker))) ledger.closed.push(t);
    },
    async () => {
      const n = `${process.pid}-${++serial}`;
      if (
        succeeded(
          'client',
          await box.json('PUT', `/Client/c-${n}`, { grant_types: ['client_credentials'], secret: `secret-of-${n}` }, root),
          [201],
        )
      ) {
        ledger.clients.push(`c-${n}`);
      }
      const policy = { engine: 'allow', link: [{ id: `c-${n}`, resourceType: 'Client' }] };
      if (succeeded('policy', await box.json('PUT', `/AccessPolicy/p-${n}`, policy, root), [201])) ledger.policies.push(`p-${n}`);
      const user = await box.json('POST', '/users', { email: `u-${n}@example.com`, password: `password-of-${n}` }, root);
      if (succeeded('user', user, [201])) ledger.users.push(String(user.body.id));
    },
  ];
  const done = Promise.all(steps.map(loop));
  return {
    wrong,
    answered: () => answered,
    lastSuccess: () => lastSuccess,
    async stop() {
      running = false;
      await done;
    },
  };
}

/** What of `ledger` the boxes no longer show, in words (empty: nothing lost). Spread over the boxes, 20 at a time. */
export async function lost(boxes: Box[], root: string, ledger: Ledger): Promise<string[]> {
  const missing: string[] = [];
  const checks: (() => Promise<void>)[] = [];
  const at = (i: number): Box => boxes[i % boxes.length]!;
  ledger.tokens.forEach((t, i) =>
    checks.push(async () => {
      const res = await at(i).form('/auth/introspect', { token: t }, { Authorization: basic(WORKER.id, WORKER.secret) });
      if (res.body?.active !== true) missing.push(`token ${i}: ${res.status} ${res.text.slice(0, 80)}`);
    }),
  );
  ledger.refreshTokens.forEach((t, i) =>
    checks.push(async () => {
      const res = await at(i).form(
        '/auth/token',
        { grant_type: 'refresh_token', refresh_token: t },
        { Authorization: basic(WORKER.id, WORKER.secret) },
      );
      if (res.status !== 200) missing.push(`refresh token ${i}: ${res.status} ${res.text.slice(0, 80)}`);
    }),
  );
  ledger.closed.forEach((t, i) =>
    checks.push(async () => {
      const res = await at(i).form('/auth/introspect', { token: t }, { Authorization: basic(WORKER.id, WORKER.secret) });
      if (res.status !== 200 || res.body.active !== false) missing.push(`close ${i}: ${res.status} ${res.text.slice(0, 80)}`);
    }),
  );
  let n = 0;
  const exists = (what: string, path: string) => async () => {
    const res = await at(n++).json('GET', path, undefined, root);
    if (res.status !== 200) missing.push(`${what}: ${res.status} ${res.text.slice(0, 80)}`);
  };
  for (const id of ledger.clients) checks.push(exists(`client ${id}`, `/Client/${id}`));
  for (const id of ledger.policies) checks.push(exists(`policy ${id}`, `/AccessPolicy/${id}`));
  for (const id of ledger.users) checks.push(exists(`user ${id}`, `/users/${id}`));
  for (let i = 0; i < checks.length; i += 20) await Promise.all(checks.slice(i, i + 20).map((c) => c()));
  return missing;
}
