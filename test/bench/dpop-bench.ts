// The DPoP rows of `make bench` (RFC 9449): a bound token's issuance (client_credentials
// with a proof) and its use (GET /Client/<id> with a proof), and the CPU one proof check
// costs. A proof is good once and for 60 s, so these rows cannot replay a few prepared
// requests as the others do: each gets as many proofs as it can send, signed just before
// it runs, each sent once, by as many wrk threads as the other rows use, each thread its own
// share of the list (else they would walk the same one) streamed from a file as it sends
// (./load.ts), with no warm-up of its own (the rows before it warmed the box up).
import crypto, { randomUUID } from 'node:crypto';
import { Dpop } from '../../api/credentials/dpop/check.js';
import { accessTokenHash, verifyProof } from '../../api/credentials/dpop/proof.js';
import { basic, type Box } from '../support/box.js';
import type { BenchRequest } from './load.js';
import { drive } from './load.js';
import { LOAD, stopping, type Measured } from './measure.js';
import { CpuMeter, RssSampler } from './process-stats.js';

export const DPOP_KEYS = ['dpop_cc', 'dpop_use'] as const;

/** A client's ES256 key, and proofs signed with it (node:crypto: tens of thousands a second). */
export function proofMaker(): (htm: string, htu: string, token?: string) => string {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const header = Buffer.from(JSON.stringify({ typ: 'dpop+jwt', alg: 'ES256', jwk: publicKey.export({ format: 'jwk' }) })).toString(
    'base64url',
  );
  return (htm, htu, token) => {
    const claims = { jti: randomUUID(), htm, htu, iat: Math.floor(Date.now() / 1000), ...(token ? { ath: accessTokenHash(token) } : {}) };
    const input = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
    return `${input}.${crypto.sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
  };
}

/** Proofs a row may send: more than it can send in its time at the best rate seen (BENCH_DPOP_PROOFS). */
export const PROOFS = Number(process.env.BENCH_DPOP_PROOFS ?? 8000 * LOAD.seconds);

/** `n` client_credentials requests of `client` to `baseUrl`'s token endpoint, each with a fresh proof of one key. */
export function dpopTokenRequests(baseUrl: string, client: { id: string; secret: string }, n: number): BenchRequest[] {
  const proof = proofMaker();
  const tokenUrl = `${baseUrl}/auth/token`;
  return Array.from({ length: n }, () => ({
    method: 'POST',
    path: '/auth/token',
    headers: {
      Authorization: basic(client.id, client.secret),
      'Content-Type': 'application/x-www-form-urlencoded',
      DPoP: proof('POST', tokenUrl),
    },
    body: 'grant_type=client_credentials',
  }));
}

/** One row's load: each request once, shared out among the wrk threads, the box's processes and PostgreSQL metered. */
export async function measureOnce(url: string, rootPid: number, requests: BenchRequest[], postgresPid?: number): Promise<Measured> {
  const rss = new RssSampler(rootPid);
  const cpu = new CpuMeter(rootPid, postgresPid);
  rss.start();
  cpu.start();
  // LOAD.threads, as measure(): on a busy machine a load of one thread gets half the CPU time of a
  // load of two, and the row would measure wrk's share of the cores, not the box.
  const result = await drive(url, requests, {
    connections: LOAD.connections,
    threads: LOAD.threads,
    seconds: LOAD.seconds,
    shareOut: true,
  }).catch(stopping(rss));
  const used = cpu.stop();
  const rssMb = rss.stop();
  return {
    ...result,
    rssMb,
    rssTotalMb: rss.totalMb(),
    cpuUs: { api: (used.api * 1e6) / result.requests, postgres: (used.postgres * 1e6) / result.requests },
    warmupRequests: 0,
  };
}

export interface DpopRow {
  key: (typeof DPOP_KEYS)[number];
  title: string;
  measured: Measured;
}

/** The DPoP rows named in `keys`, against `box`; `reader` has a policy that lets it GET /Client/<id>. */
export async function benchDpop(
  box: Box,
  client: { id: string; secret: string },
  reader: { id: string; secret: string },
  keys: readonly string[],
  postgresPid: number | undefined,
  log: (msg: string) => void,
  beforeRow: () => Promise<void> = () => Promise.resolve(),
): Promise<DpopRow[]> {
  const rows: DpopRow[] = [];
  const tokenUrl = `${box.url}/auth/token`;
  if (keys.includes('dpop_cc')) {
    log(`signing ${PROOFS.toLocaleString('en')} DPoP proofs for the token endpoint`);
    const requests = dpopTokenRequests(box.url, client, PROOFS);
    await beforeRow();
    const measured = await measureOnce(box.url, box.process!.pid!, requests, postgresPid);
    rows.push({ key: 'dpop_cc', title: 'client_credentials + DPoP proof (bound, opaque)', measured });
  }
  if (keys.includes('dpop_use')) {
    const proof = proofMaker();
    const res = await box.form(
      '/auth/token',
      { grant_type: 'client_credentials' },
      {
        Authorization: basic(reader.id, reader.secret),
        DPoP: proof('POST', tokenUrl),
      },
    );
    if (res.body.token_type !== 'DPoP') throw new Error(`no bound token: ${res.text}`);
    const token = res.body.access_token as string;
    const path = `/Client/${client.id}`;
    log(`signing ${PROOFS.toLocaleString('en')} DPoP proofs for ${path}`);
    const requests: BenchRequest[] = Array.from({ length: PROOFS }, () => ({
      method: 'GET',
      path,
      headers: { Authorization: `DPoP ${token}`, DPoP: proof('GET', `${box.url}${path}`, token) },
    }));
    await beforeRow();
    const measured = await measureOnce(box.url, box.process!.pid!, requests, postgresPid);
    rows.push({ key: 'dpop_use', title: 'GET /Client/<id> with a DPoP-bound token + proof', measured });
  }
  return rows;
}

/**
 * The CPU one proof check costs, in this process: the proof alone (verifyProof: parse,
 * ES256 signature, claims), and the whole check but the database (Dpop.check with the
 * replay cache in memory). The goal: at most 100 µs.
 */
export async function proofCheckCpu(n = 5000): Promise<{ verifyUs: number; checkUs: number }> {
  const proof = proofMaker();
  const url = 'https://box.example/Client/x';
  const token = 'a'.repeat(43);
  const proofs = Array.from({ length: n }, () => proof('GET', url, token));
  const request = { method: 'GET', url, accessToken: token, now: Date.now() };
  verifyProof(proofs[0]!, request); // the key is parsed once per client
  let t0 = process.cpuUsage();
  for (const p of proofs) if ('problem' in verifyProof(p, request)) throw new Error('a bench proof was refused');
  let used = process.cpuUsage(t0);
  const verifyUs = (used.user + used.system) / n;
  const seen = new Set<string>();
  const dpop = new Dpop(
    {
      firstSeen: (s) => {
        const k = s.digest.toString('hex');
        const first = !seen.has(k);
        seen.add(k);
        return Promise.resolve(first);
      },
    },
    undefined,
  );
  const more = Array.from({ length: n }, () => proof('GET', url, token));
  t0 = process.cpuUsage();
  for (const p of more)
    if ('error' in (await dpop.check([p], { ...request, now: Date.now() }))) throw new Error('a bench proof was refused');
  used = process.cpuUsage(t0);
  return { verifyUs, checkUs: (used.user + used.system) / n };
}
