// What the decision ceilings (ceiling-decision.ts, ceiling-grpc.ts) do for each
// request, and all they do: verify the request's ES256 JWT with jose against the
// box's published keys (fetched once, as an app that verifies its own tokens
// would), its issuer, audience and expiry. Settings come from the environment:
// CEILING_JWKS_URL, CEILING_ISSUER, CEILING_AUDIENCE.
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';

/** Resolves to the token's client (its `client_id`, else `sub`); rejects a token that does not verify. */
export type Verifier = (authorization: string | undefined) => Promise<string>;

export async function verifierFromEnv(): Promise<Verifier> {
  const res = await fetch(process.env.CEILING_JWKS_URL!);
  const keys = createLocalJWKSet((await res.json()) as JSONWebKeySet);
  const options = { issuer: process.env.CEILING_ISSUER!, audience: process.env.CEILING_AUDIENCE!, algorithms: ['ES256'] };
  return async (authorization) => {
    const token = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
    if (!token) throw new Error('no bearer token');
    const { payload } = await jwtVerify(token, keys, options);
    return String(payload.client_id ?? payload.sub);
  };
}

/** Runs `serve` in `CEILING_WORKERS` processes sharing its port (node:cluster), as the box runs its workers. */
export async function inWorkers(serve: () => Promise<void>): Promise<void> {
  const cluster = (await import('node:cluster')).default;
  const workers = Number(process.env.CEILING_WORKERS ?? 1);
  if (cluster.isPrimary && workers > 1) for (let i = 0; i < workers; i++) cluster.fork();
  else await serve();
}
