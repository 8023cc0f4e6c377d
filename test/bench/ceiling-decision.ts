// The ceiling of `make bench`'s decision scenarios: a bare Node HTTP server that
// does the least a decision point must — verify the ES256 JWT of the request's
// Authorization header with node:crypto against the box's published key, check
// its expiry and audience, and answer 200 with the caller in a header — with no
// policy, no session check, no framework. Run with as many workers as the box:
// `node dist/test/bench/ceiling-decision.js` with CEILING_PORT, CEILING_WORKERS,
// CEILING_JWKS_URL and CEILING_AUDIENCE set.
import cluster from 'node:cluster';
import { createPublicKey, verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import http from 'node:http';

const port = Number(process.env.CEILING_PORT);
const workers = Number(process.env.CEILING_WORKERS ?? 1);
const audience = process.env.CEILING_AUDIENCE ?? '';

async function keys(): Promise<Map<string, KeyObject>> {
  const res = await fetch(process.env.CEILING_JWKS_URL!);
  const { keys: jwks } = (await res.json()) as { keys: (JsonWebKey & { kid: string; alg?: string })[] };
  return new Map(jwks.filter((k) => k.crv === 'P-256').map((k) => [k.kid, createPublicKey({ key: k, format: 'jwk' })]));
}

async function serve(): Promise<void> {
  const published = await keys();
  http
    .createServer((req, res) => {
      const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      const [h = '', p = '', s = ''] = token.split('.');
      try {
        const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as { kid: string };
        const key = published.get(header.kid);
        const ok = key && verify('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'));
        const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as { exp: number; aud?: string | string[]; sub: string };
        const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
        if (!ok || claims.exp * 1000 <= Date.now() || !audiences.includes(audience)) throw new Error('refused');
        res.writeHead(200, { 'X-Auth-Request-Client': claims.sub }).end();
      } catch {
        res.writeHead(401, { 'WWW-Authenticate': 'Bearer' }).end();
      }
    })
    .listen(port, '127.0.0.1');
}

if (cluster.isPrimary && workers > 1) {
  for (let i = 0; i < workers; i++) cluster.fork();
} else {
  void serve();
}
