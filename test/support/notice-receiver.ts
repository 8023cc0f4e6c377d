// A relying party's back-channel logout endpoint, as a test's own node:http server: it verifies
// every logout token with jose against the box's published keys (OpenID Connect Back-Channel
// Logout 1.0 §2.6) and keeps what it was told, in the order it was told. It can be down (its port
// closed), refuse (503), or hang (never answer), as a real receiver is at times.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import pg from 'pg';
import { generateKeyPair, signingKey } from '../../api/credentials/jwt.js';
import { mint } from '../../api/credentials/tokens.js';
import { insertSessions } from '../../api/store/sessions.js';
import type { Box } from './box.js';

/** A logout token as the receiver verified it. */
export interface Told {
  sub: string | undefined;
  sid: string | undefined;
  jti: string;
  /** When it arrived (ms since the epoch). */
  at: number;
}

export type ReceiverMode = 'up' | 'refuse' | 'hang';

export class LogoutReceiver {
  readonly told: Told[] = [];
  /** Tokens that did not verify, with why: a test expects none. */
  readonly wrong: string[] = [];
  mode: ReceiverMode = 'up';
  /** How long it takes to answer a token it accepts: sends are in flight that long. */
  delayMs = 0;
  /** Requests that arrived, answered or not. */
  requests = 0;
  private readonly hanging = new Set<http.ServerResponse>();
  private server: http.Server | undefined;
  private port = 0;

  private constructor(
    private readonly box: Box,
    /** The client (the token's `aud`) this receiver is the relying party of. */
    readonly client: string,
  ) {}

  /** A receiver for `client` of `box`, listening on 127.0.0.1. */
  static async start(box: Box, client: string): Promise<LogoutReceiver> {
    const receiver = new LogoutReceiver(box, client);
    await receiver.up();
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/backchannel-logout`;
  }

  /** Listens (again, on the same port). */
  async up(): Promise<void> {
    const jwks = createRemoteJWKSet(new URL(`${this.box.url}/.well-known/jwks.json`));
    const server = http.createServer((req, res) => {
      this.requests++;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (this.mode === 'hang') return void this.hanging.add(res);
        if (this.mode === 'refuse') return void res.writeHead(503).end();
        const token = new URLSearchParams(Buffer.concat(chunks).toString('utf8')).get('logout_token') ?? '';
        jwtVerify(token, jwks, { issuer: this.box.url, audience: this.client, typ: 'logout+jwt' }).then(
          ({ payload }) => {
            const at = Date.now();
            setTimeout(() => {
              this.told.push({ sub: payload.sub, sid: payload.sid as string | undefined, jti: payload.jti!, at });
              res.writeHead(200).end();
            }, this.delayMs);
          },
          (err: Error) => {
            this.wrong.push(err.message);
            res.writeHead(400).end();
          },
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and drops every connection: the box finds it refused. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    for (const res of this.hanging) res.destroy();
    this.hanging.clear();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** The sids told of `sub`, in the order they arrived. */
  sidsOf(sub: string): string[] {
    return this.told.filter((t) => t.sub === sub).map((t) => t.sid!);
  }
}

/** A Client of the code flow whose back-channel logout URI is `uri`. */
export async function addLogoutClient(box: Box, id: string, uri: string): Promise<void> {
  await box.addClient(
    id,
    {
      grant_types: ['authorization_code'],
      auth: { authorization_code: { redirect_uri: 'https://app.example/cb' } },
      backchannel_logout_uri: uri,
    },
    { policy: false },
  );
}

/** Allows receivers at 127.0.0.1 (the tests' own) for every process of the box: PUT /settings/notices. */
export async function allowLoopbackReceivers(box: Box, root: string): Promise<void> {
  const res = await box.json('PUT', '/settings/notices', { allowed_addresses: ['127.0.0.1/32'] }, root);
  if (res.status !== 200) throw new Error(`PUT /settings/notices: ${res.status} ${res.text}`);
}

/** A person through the API; their id. */
export async function addPerson(box: Box, root: string, email: string): Promise<number> {
  const res = await box.json('POST', '/users', { email, password: 'a-good-password' }, root);
  if (res.status !== 201) throw new Error(`POST /users: ${res.status} ${res.text}`);
  return Number(res.body.id);
}

/**
 * Sessions of `userId` at `client` as a browser sign-in leaves them (each with its own `sid`:
 * the `sid` of its ID tokens), minted straight into the box's database (or `databaseUrl`, one
 * host of it); their session ids.
 */
export async function mintSessions(
  box: Box,
  userId: number,
  client: string,
  sids: string[],
  databaseUrl = box.databaseUrl,
): Promise<string[]> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const key = signingKey('unused', 'ES256', privateKey, publicKey);
  const sessions = sids.map(
    (sid) =>
      mint(
        {
          type: 'authorization_code',
          origin: 'authorization_code',
          userId,
          refresh: false,
          details: { sid },
          settings: {},
          client: { resourceType: 'Client', id: client, grant_types: ['authorization_code'] },
        },
        box.url,
        key,
      ).session,
  );
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await insertSessions(db, sessions);
  } finally {
    await db.end();
  }
  return sessions.map((s) => s.id);
}
