// The box as `boxauth kube-login` sees it: an OpenID Provider found by discovery,
// whose token endpoint answers ID tokens that are checked here (signature against
// the box's JWKS, issuer, audience, expiry, nonce) before kubectl ever sees them.
// undici's own fetch and Agent: Node's fetch cannot be told of a private CA.
import fs from 'node:fs';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import { Agent, fetch } from 'undici';
import { errorMessage } from '../../errors.js';
import { CliError, describeFailure } from '../api.js';

/** The token endpoint said no (an OAuth error answer): the grant, not the network, failed. */
export class TokenRefused extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface SignedIn {
  idToken: string;
  /** The ID token's exp (epoch seconds) and subject. */
  exp: number;
  sub: string;
  refreshToken?: string;
}

export interface DeviceAuthorization {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete?: string;
  expires_in: number;
  interval?: number;
}

interface Metadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  device_authorization_endpoint?: string;
}

const TLS_TRUST_ERRORS = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
]);

export class BoxClient {
  private constructor(
    readonly issuer: string,
    readonly clientId: string,
    private readonly meta: Metadata,
    private readonly agent: Agent,
  ) {}

  /** Reads the box's discovery document; `caFile` is the CA to trust for an https box with a private one. */
  static async connect(issuer: string, clientId: string, caFile?: string): Promise<BoxClient> {
    let ca: string | undefined;
    if (caFile) {
      try {
        ca = fs.readFileSync(caFile, 'utf8');
      } catch (err) {
        throw new CliError(`cannot read --ca-file ${caFile}: ${errorMessage(err)}`, 1, { cause: err });
      }
    }
    const agent = new Agent(ca ? { connect: { ca } } : {});
    try {
      const url = `${issuer}/.well-known/openid-configuration`;
      const res = await send(agent, url, {});
      const meta = (await res.json().catch(() => undefined)) as Partial<Metadata> | undefined;
      if (!res.ok || !meta) throw new CliError(`${url} answered ${res.status}: is ${issuer} a box?`);
      if (meta.issuer !== issuer) {
        throw new CliError(`the box at ${issuer} calls itself "${String(meta.issuer)}": give that as --box`);
      }
      if (!meta.authorization_endpoint || !meta.token_endpoint || !meta.jwks_uri) {
        throw new CliError(`${url} lacks the authorization, token or JWKS endpoint`);
      }
      return new BoxClient(issuer, clientId, meta as Metadata, agent);
    } catch (err) {
      await agent.close();
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  get authorizationEndpoint(): string {
    return this.meta.authorization_endpoint;
  }

  private async postForm(url: string, params: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await send(this.agent, url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams(params).toString(),
    });
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (!res.ok && typeof body.error === 'string') {
      throw new TokenRefused(body.error, describeFailure(res.status, body));
    }
    if (!res.ok) throw new CliError(`${url}: ${describeFailure(res.status, body)}`);
    return { status: res.status, body };
  }

  /** An answer of the token endpoint that carries an ID token, checked. */
  private async token(params: Record<string, string>, expect: { nonce?: string; sub?: string } = {}): Promise<SignedIn> {
    const { body } = await this.postForm(this.meta.token_endpoint, { client_id: this.clientId, ...params });
    if (typeof body.id_token !== 'string') {
      throw new CliError(`the box answered no ID token: does client "${this.clientId}" allow scope openid?`);
    }
    const claims = await this.verify(body.id_token);
    if (expect.nonce !== undefined && claims.nonce !== expect.nonce)
      throw new CliError('the ID token does not carry the nonce of this sign-in');
    // Core §12.2: a refresh speaks of the same person, or of nobody.
    if (expect.sub !== undefined && claims.sub !== expect.sub) throw new CliError('the refreshed ID token names another user');
    return {
      idToken: body.id_token,
      exp: claims.exp,
      sub: claims.sub,
      ...(typeof body.refresh_token === 'string' ? { refreshToken: body.refresh_token } : {}),
    };
  }

  /** Signature (the box's keys as its JWKS lists them now), issuer, audience and expiry. */
  async verify(idToken: string): Promise<{ sub: string; exp: number; nonce?: unknown }> {
    const res = await send(this.agent, this.meta.jwks_uri, {});
    if (!res.ok) throw new CliError(`${this.meta.jwks_uri} answered ${res.status}`);
    const jwks = createLocalJWKSet((await res.json()) as JSONWebKeySet);
    try {
      const { payload } = await jwtVerify(idToken, jwks, {
        issuer: this.issuer,
        audience: this.clientId,
        requiredClaims: ['sub', 'exp', 'iat'],
      });
      return { sub: payload.sub!, exp: payload.exp!, nonce: payload.nonce };
    } catch (err) {
      throw new CliError(`the box's ID token does not check out: ${errorMessage(err)}`, 1, { cause: err });
    }
  }

  exchangeCode(code: string, redirectUri: string, verifier: string, nonce: string): Promise<SignedIn> {
    return this.token({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier }, { nonce });
  }

  refresh(refreshToken: string, sub?: string): Promise<SignedIn> {
    return this.token({ grant_type: 'refresh_token', refresh_token: refreshToken }, sub === undefined ? {} : { sub });
  }

  pollDevice(deviceCode: string): Promise<SignedIn> {
    return this.token({ grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: deviceCode });
  }

  async startDevice(scope: string): Promise<DeviceAuthorization> {
    const endpoint = this.meta.device_authorization_endpoint;
    if (!endpoint) throw new CliError(`the box at ${this.issuer} does not offer the device flow: sign in without --device`);
    const { body } = await this.postForm(endpoint, { client_id: this.clientId, scope });
    const { device_code, user_code, verification_uri, verification_uri_complete, expires_in, interval } = body;
    if (typeof device_code !== 'string' || typeof user_code !== 'string' || typeof verification_uri !== 'string') {
      throw new CliError(`${endpoint} answered no device code`);
    }
    return {
      device_code,
      user_code,
      verification_uri,
      verification_uri_complete: typeof verification_uri_complete === 'string' ? verification_uri_complete : undefined,
      expires_in: typeof expires_in === 'number' ? expires_in : 600, // RFC 8628 §3.2: REQUIRED; a box always sends it
      interval: typeof interval === 'number' ? interval : undefined,
    };
  }
}

async function send(agent: Agent, url: string, init: Parameters<typeof fetch>[1]): ReturnType<typeof fetch> {
  try {
    return await fetch(url, { ...init, dispatcher: agent, redirect: 'error' });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const code = cause?.code ?? cause?.message ?? errorMessage(err);
    const hint = TLS_TRUST_ERRORS.has(code) ? ' (a private CA? give its certificate with --ca-file)' : '';
    throw new CliError(`cannot reach the box at ${new URL(url).origin}: ${code}${hint}`, 1, { cause: err });
  }
}
