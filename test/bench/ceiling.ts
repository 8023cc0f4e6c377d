// The ceiling of `make bench`: a bare Node HTTP server, no framework and no
// database, answering the bench's client_credentials request with the same ES256
// JWT the box signs, with node:crypto. It checks what a token endpoint must check
// (method, grant, client secret in constant time) and nothing else, so it shows
// what this machine can do for the request at all. Run with as many workers as
// the box: `node dist/test/bench/ceiling.js` with CEILING_PORT, CEILING_WORKERS,
// CEILING_CLIENT_ID and CEILING_CLIENT_SECRET set.
import cluster from 'node:cluster';
import { createHash, generateKeyPairSync, randomUUID, sign, timingSafeEqual } from 'node:crypto';
import http from 'node:http';

const port = Number(process.env.CEILING_PORT);
const workers = Number(process.env.CEILING_WORKERS ?? 1);
const clientId = process.env.CEILING_CLIENT_ID ?? 'bench';
const secretDigest = createHash('sha256')
  .update(process.env.CEILING_CLIENT_SECRET ?? '')
  .digest();
const issuer = `http://127.0.0.1:${port}`;

function serve(): void {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const header = Buffer.from(JSON.stringify({ alg: 'ES256', typ: 'at+jwt', kid: 'ceiling' })).toString('base64url');
  const send = (res: http.ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }).end(JSON.stringify(body));
  };
  http
    .createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/auth/token') return send(res, 404, { error: 'not_found' });
        const params = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
        const [id, secret] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64')
          .toString('utf8')
          .split(':');
        if (
          id !== clientId ||
          !timingSafeEqual(
            createHash('sha256')
              .update(secret ?? '')
              .digest(),
            secretDigest,
          )
        ) {
          return send(res, 401, { error: 'invalid_client' });
        }
        if (params.get('grant_type') !== 'client_credentials') return send(res, 400, { error: 'unsupported_grant_type' });
        const now = Math.floor(Date.now() / 1000);
        const audience = params.get('audience');
        const payload = Buffer.from(
          JSON.stringify({
            iss: issuer,
            sub: id,
            client_id: id,
            ...(audience ? { aud: audience } : {}),
            iat: now,
            exp: now + 3600,
            jti: randomUUID(),
          }),
        ).toString('base64url');
        const input = `${header}.${payload}`;
        const signature = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
        send(res, 200, { access_token: `${input}.${signature}`, token_type: 'Bearer', expires_in: 3600 });
      });
    })
    .listen(port, '127.0.0.1');
}

if (cluster.isPrimary && workers > 1) {
  for (let i = 0; i < workers; i++) cluster.fork();
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    process.exit(0);
  });
} else {
  serve();
}
