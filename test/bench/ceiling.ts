// The bare ceiling of `make bench`: a bare Node HTTP server, no framework and no
// database, answering the bench's client_credentials request with the same ES256
// JWT the box signs, with node:crypto. It checks what a token endpoint must check
// (method, grant, client secret in constant time) and nothing else, so it shows
// what this machine can do for the request at all. Run with as many workers as
// the box: `node dist/test/bench/ceiling.js` with CEILING_PORT, CEILING_WORKERS,
// CEILING_CLIENT_ID and CEILING_CLIENT_SECRET set. The durable ceilings
// (./ceiling-durable.ts) answer with these same parts and write a row besides.
import { createHash, generateKeyPairSync, randomUUID, sign, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { inWorkers } from './ceiling-verify.js';

export const port = Number(process.env.CEILING_PORT);
const clientId = process.env.CEILING_CLIENT_ID ?? 'bench';
const secretDigest = createHash('sha256')
  .update(process.env.CEILING_CLIENT_SECRET ?? '')
  .digest();
export const issuer = `http://127.0.0.1:${port}`;

export interface TokenRequest {
  req: http.IncomingMessage;
  res: http.ServerResponse;
  params: URLSearchParams;
  clientId: string;
  /** The jti of the client assertion it authenticated with (ceiling-durable.ts `assertion`), for the replay ledger. */
  assertionJti?: string;
}

/** How a request's client is authenticated: its id (and its assertion's jti), or undefined for invalid_client. */
export type Authenticate = (req: http.IncomingMessage, params: URLSearchParams) => { clientId: string; assertionJti?: string } | undefined;

/** The client's secret in HTTP Basic, its digest compared in constant time. */
const secretInBasic: Authenticate = (req) => {
  const [id, secret] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64')
    .toString('utf8')
    .split(':');
  const digest = createHash('sha256')
    .update(secret ?? '')
    .digest();
  return id === clientId && timingSafeEqual(digest, secretDigest) ? { clientId: id } : undefined;
};

export const send = (res: http.ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' }).end(JSON.stringify(body));
};

/** A node:http server of POST /auth/token that reads the form and authenticates the client (by default its secret in HTTP Basic), then calls `grant`. */
export function tokenServer(grant: (request: TokenRequest) => void, authenticate: Authenticate = secretInBasic): http.Server {
  return http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/auth/token') return send(res, 404, { error: 'not_found' });
      const params = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const client = authenticate(req, params);
      if (!client) return send(res, 401, { error: 'invalid_client' });
      grant({ req, res, params, ...client });
    });
  });
}

/** An ES256 signer of access tokens as the box's (`at+jwt`, a jti each), with a key of its own. */
export function jwtSigner(): (claims: { sub: string; audience: string | null; now: number; jti: string }) => string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const header = Buffer.from(JSON.stringify({ alg: 'ES256', typ: 'at+jwt', kid: 'ceiling' })).toString('base64url');
  return ({ sub, audience, now, jti }) => {
    const payload = Buffer.from(
      JSON.stringify({ iss: issuer, sub, client_id: sub, ...(audience ? { aud: audience } : {}), iat: now, exp: now + 3600, jti }),
    ).toString('base64url');
    const input = `${header}.${payload}`;
    const signature = sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
    return `${input}.${signature}`;
  };
}

function serve(): Promise<void> {
  const signJwt = jwtSigner();
  tokenServer(({ res, params, clientId: id }) => {
    if (params.get('grant_type') !== 'client_credentials') return send(res, 400, { error: 'unsupported_grant_type' });
    const token = signJwt({ sub: id, audience: params.get('audience'), now: Math.floor(Date.now() / 1000), jti: randomUUID() });
    send(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 3600 });
  }).listen(port, '127.0.0.1');
  return Promise.resolve();
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await inWorkers(serve);
