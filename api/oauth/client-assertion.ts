// private_key_jwt: a Client authenticated by a JWT it signed with one of its own keys (OpenID Connect
// Core §9, RFC 7523 §2.2 and §3), registered as `jwks` or fetched from its `jwks_uri` (RFC 7591 §2;
// what they may hold: ../client-keys.ts). The decision is `checkClientAssertion`, pure, with the clock
// given; around it, the key the assertion names (fetched through the box's guard for addresses others
// name, ../document-fetch.ts) and, last, the replay ledger every process of the box shares
// (../store/dpop-proofs.ts), so that a forged or stale assertion costs the database nothing.
import crypto, { createHash, type JsonWebKey, type KeyObject } from 'node:crypto';
import type { Config } from '../config.js';
import { CLIENT_ASSERTION_ALGS, type ClientAssertionAlg, jwkSetProblems, keyAlgProblem } from '../client-keys.js';
import { signatureVerifies } from '../credentials/dpop/proof.js';
import { thumbprint } from '../credentials/jwt.js';
import { RemoteKeySet } from '../credentials/workload/keys.js';
import type { ProofLedger, SeenProof } from '../store/dpop-proofs.js';
import type { Client } from '../types.js';
import { AddressRefused, DocumentFetchError, clientDocumentRules, fetchClientDocument } from '../document-fetch.js';
import { errorMessage } from '../errors.js';

/** Clock skew allowed between the client and the box (as for workload tokens). */
export const SKEW_SECONDS = 60;
/** How far ahead an assertion's exp may be: an assertion is made for one request, not kept. */
export const MAX_LIFETIME_SECONDS = 300;
/** The most of a JWK Set read from a jwks_uri. */
export const MAX_JWKS_BYTES = 64 * 1024;

/** The explicit type of a client assertion (draft-ietf-oauth-rfc7523bis). */
export const CLIENT_ASSERTION_TYP = 'client-authentication+jwt';

/** A JWT split into what the checks read. */
export interface AssertionJwt {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signingInput: Buffer;
  signature: Buffer;
}

/**
 * The last assertion split, with its parts: a request's assertion is read twice, once for whose it is
 * (assertionNames, ./client-auth.ts) and once to check it (ClientAssertions.authenticate), and the
 * second costs nothing (make bench: the parse is a tenth of the assertion's CPU). One entry: requests
 * interleaving between the two reads only parse again.
 */
let lastSplit: { token: string; parts: AssertionJwt | { problem: string } } | undefined;

/** The assertion's parts, or why it is not a JWT. */
export function assertionParts(token: string): AssertionJwt | { problem: string } {
  if (lastSplit?.token === token) return lastSplit.parts;
  const parts = jwtParts(token);
  lastSplit = { token, parts };
  return parts;
}

/** A compact JWS split into what the checks read, or why it is not one; `name` is the parameter that carried it. */
export function jwtParts(token: string, name = 'client_assertion'): AssertionJwt | { problem: string } {
  const segments = token.split('.');
  if (segments.length !== 3) return { problem: `${name} is not a signed JWT (three base64url parts)` };
  const [h, p, s] = segments as [string, string, string];
  try {
    const header: unknown = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
    const payload: unknown = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
    if (typeof header !== 'object' || typeof payload !== 'object' || !header || !payload || Array.isArray(payload)) throw new Error();
    // RFC 7515 §4.1.11: a recipient "MUST" reject a JWS whose crit names an extension it does not
    // understand; the box understands none, so a signer that made one critical is not understood.
    if ('crit' in header) return { problem: `${name} has a crit header: this box understands no JWS extension (RFC 7515 §4.1.11)` };
    return {
      header: header as Record<string, unknown>,
      payload: payload as Record<string, unknown>,
      signingInput: Buffer.from(`${h}.${p}`),
      signature: Buffer.from(s, 'base64url'),
    };
  } catch {
    return { problem: `${name} is not a JWT (its header and claims must be JSON objects)` };
  }
}

/**
 * Why `jwt` is explicitly typed as another kind of JWT than `own` (RFC 8725 §3.11, RFC 9101 §10.8):
 * a client signs its assertions and its request objects (./request-object.ts) with the same keys, and
 * a request object travels through the browser; its typ keeps one from being taken as the other.
 * Untyped, or the generic "JWT", is no claim either way. RFC 7515 §4.1.9: compared without case,
 * "application/" left out.
 */
export function typProblem(jwt: AssertionJwt, name: string, own: string): string | undefined {
  const typ = jwt.header.typ;
  if (typ === undefined) return undefined;
  const kind = typeof typ === 'string' ? typ.toLowerCase().replace(/^application\//, '') : undefined;
  return kind === 'jwt' || kind === own
    ? undefined
    : `${name}'s typ ${JSON.stringify(typ).slice(0, 80)} names another kind of JWT: type it "${own}", "JWT", or leave typ out`;
}

/** The claims' iss and sub, unverified: which way of client authentication the assertion asks for (./client-auth.ts). */
export function assertionNames(token: string): { iss: string | undefined; sub: string | undefined } {
  const jwt = assertionParts(token);
  if ('problem' in jwt) return { iss: undefined, sub: undefined };
  const { iss, sub } = jwt.payload;
  return { iss: typeof iss === 'string' ? iss : undefined, sub: typeof sub === 'string' ? sub : undefined };
}

/** The assertion's alg, when one the box accepts; else why not. */
export function assertionAlg(jwt: AssertionJwt): ClientAssertionAlg | { problem: string } {
  const alg = jwt.header.alg;
  return (CLIENT_ASSERTION_ALGS as readonly unknown[]).includes(alg)
    ? (alg as ClientAssertionAlg)
    : {
        problem: `alg not allowed: ${JSON.stringify(alg)}; a client assertion is signed with ${CLIENT_ASSERTION_ALGS.join(', ')} (RS256, HS256 and none are refused)`,
      };
}

/** What an accepted assertion leaves for the replay ledger. */
export interface AcceptedAssertion {
  jti: string;
  exp: number;
}

export interface AssertionRules {
  /** The client the assertion must be of. */
  clientId: string;
  /** The box's issuer identifier (its base URL), the one audience an assertion may have. */
  issuer: string;
  /** Now, in seconds since the epoch. */
  now: number;
}

/**
 * Whether `jwt`, signed under `alg` with `key`, authenticates `rules.clientId` at this box now (all but
 * replay, which the ledger decides); the first rule that fails, by name, when it does not.
 */
export function checkClientAssertion(
  jwt: AssertionJwt,
  alg: ClientAssertionAlg,
  key: KeyObject,
  rules: AssertionRules,
): AcceptedAssertion | { problem: string } {
  const typed = typProblem(jwt, 'the assertion', CLIENT_ASSERTION_TYP);
  if (typed) return { problem: typed };
  // A request object carries an authorization request (response_type is required of every one), and
  // may carry iss, sub and aud as an assertion's: one that passed through a browser, typed or not,
  // must not authenticate its client at the token endpoint.
  if (jwt.payload.response_type !== undefined)
    return { problem: 'the assertion carries response_type: it is a request object (RFC 9101), not a client assertion' };
  const keyProblem = keyAlgProblem(alg, key);
  if (keyProblem) return { problem: `alg not allowed with this key: ${keyProblem}` };
  if (!signatureVerifies({ alg, key }, jwt.signingInput, jwt.signature))
    return { problem: "bad signature: the assertion does not verify with the client's key it names" };
  const { iss, sub, aud, exp, nbf, iat, jti } = jwt.payload;
  // RFC 7523 §3 item 1: "The JWT MUST contain an "iss" (issuer) claim"; item 2: "For client
  // authentication, the subject MUST be the "client_id" of the OAuth client." OpenID Connect Core §9:
  // iss "MUST contain the client_id of the OAuth Client", sub likewise.
  if (iss !== rules.clientId || sub !== rules.clientId)
    return { problem: `iss/sub mismatch: both iss and sub must be the client's id "${rules.clientId}"` };
  // RFC 7523 §3 item 3: "The JWT MUST contain an "aud" (audience) claim containing a value that
  // identifies the authorization server as an intended audience." draft-ietf-oauth-rfc7523bis narrows
  // it: the audience is the issuer identifier, alone. The token endpoint's URL is refused: a client
  // that also speaks to another server may be told that server's "token endpoint" is this one's URL,
  // and an assertion made for a URL it was told can be replayed here (the audience injection the
  // draft was written for); the issuer identifier a client checked in discovery cannot be swapped so.
  const audiences = Array.isArray(aud) ? aud : [aud];
  if (audiences.length !== 1 || audiences[0] !== rules.issuer)
    return {
      problem: `aud must be this box's issuer identifier "${rules.issuer}", as a string or the only member of an array (not the token endpoint's URL, nor several audiences)`,
    };
  // RFC 7523 §3 item 4: "The JWT MUST contain an "exp" (expiration time) claim that limits the time
  // window during which the JWT can be used."
  if (typeof exp !== 'number') return { problem: 'expired: the assertion has no exp' };
  if (exp + SKEW_SECONDS <= rules.now)
    return { problem: `expired: exp was ${new Date(exp * 1000).toISOString()}; make a new assertion for each request` };
  if (exp - rules.now > MAX_LIFETIME_SECONDS + SKEW_SECONDS)
    return { problem: `exp too far: an assertion may be valid for ${MAX_LIFETIME_SECONDS} seconds at most` };
  // Item 5: "The JWT MAY contain an "nbf" (not before) claim"; item 6: "The JWT MAY contain an "iat" (issued at) claim".
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf - SKEW_SECONDS > rules.now)) return { problem: 'not yet valid: nbf is ahead' };
  if (iat !== undefined && (typeof iat !== 'number' || iat - SKEW_SECONDS > rules.now))
    return { problem: 'issued in the future: iat is ahead; check the clocks' };
  // OpenID Connect Core §9: jti REQUIRED, "The JWT MUST NOT be reused", RFC 7523 §3 item 7 lets the
  // server keep a list: it is kept in the ledger until exp.
  if (typeof jti !== 'string' || !jti.length || jti.length > 256)
    return { problem: 'jti required: a unique string of at most 256 characters' };
  return { jti, exp };
}

/** The refusal of an assertion whose jti was spent before. */
export const REPLAYED = 'replayed jti: this assertion was already used';

/** A refusal of a client assertion, naming the rule that failed (never a key). */
export class AssertionRefused extends Error {
  /** More than the requester is told, for the box's log (the address a jwks_uri resolved to). */
  detail?: string;
}

/**
 * The keys of clients: an inline JWK Set read once per record, a jwks_uri fetched through the guard,
 * cached, and fetched again when an assertion names a kid it does not hold (at most every 10 s:
 * ../credentials/workload/keys.ts); and the ledger an assertion's jti is spent in.
 */
export class ClientAssertions {
  private readonly inline = new WeakMap<object, { byKid: Map<string, KeyObject>; only: KeyObject | undefined }>();
  private readonly remote = new Map<string, RemoteKeySet>();

  constructor(
    private readonly config: Pick<Config, 'baseUrl' | 'clientMetadata'>,
    private readonly ledger: Pick<ProofLedger, 'firstSeen'>,
    private readonly onFetch: () => void = () => {},
    /** The box's own published signing keys (api/credentials/keyring.ts jwks). */
    private readonly ownKeys: () => readonly JsonWebKey[] = () => [],
  ) {}

  /**
   * Why `jwks` cannot be a client's: it holds one of the box's own signing keys, by kid or by RFC 7638
   * thumbprint (the box's kid). A jwks_uri at the box's own JWKS under another public name (which the
   * guard, judging names and addresses, cannot tell) would else make whatever the box signs with
   * that key an assertion of the client's: a client signs with keys of its own.
   */
  private ownKeyProblem(jwks: readonly JsonWebKey[]): string | undefined {
    const own = this.ownKeys();
    if (!own.length) return undefined;
    const kids = new Set(own.map((k) => k.kid));
    const prints = new Set(own.map((k) => thumbprint(k)));
    const found = jwks.find((k) => (typeof k.kid === 'string' && kids.has(k.kid)) || prints.has(thumbprint(k)));
    return (
      found &&
      `it holds one of this box's own signing keys (kid ${JSON.stringify(found.kid ?? thumbprint(found)).slice(0, 80)}): a client signs its assertions with keys of its own`
    );
  }

  private inlineKey(jwks: NonNullable<Client['jwks']>, kid: string | undefined): KeyObject | undefined {
    let keys = this.inline.get(jwks);
    if (!keys) {
      const own = this.ownKeyProblem(jwks.keys);
      if (own) throw new AssertionRefused(`the client's jwks is refused: ${own}`);
      const byKid = new Map<string, KeyObject>();
      const all: KeyObject[] = [];
      for (const jwk of jwks.keys) {
        const key = crypto.createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
        all.push(key);
        if (typeof jwk.kid === 'string') byKid.set(jwk.kid, key);
      }
      keys = { byKid, only: all.length === 1 ? all[0] : undefined };
      this.inline.set(jwks, keys);
    }
    return kid === undefined ? keys.only : keys.byKid.get(kid);
  }

  private remoteKeys(uri: string): RemoteKeySet {
    let keys = this.remote.get(uri);
    if (!keys) {
      keys = new RemoteKeySet(async () => {
        const { body } = await fetchClientDocument(uri, { ...clientDocumentRules(this.config), maxBytes: MAX_JWKS_BYTES });
        // A published set is held to the rules of a written one: a private key in it is a leak, not a key.
        const problems = jwkSetProblems(body);
        const keys = problems.length ? [] : (body as { keys: JsonWebKey[] }).keys;
        const own = Array.isArray((body as { keys?: unknown })?.keys) && this.ownKeyProblem((body as { keys: JsonWebKey[] }).keys);
        if (own || problems.length) throw new DocumentFetchError(`the JWK Set is refused: ${own || problems.join('; ')}`);
        return keys;
      }, this.onFetch);
      if (this.remote.size >= 10_000) this.remote.delete(this.remote.keys().next().value!);
      this.remote.set(uri, keys);
    }
    return keys;
  }

  /**
   * The key of `client` a JWT it signed names by kid (or its only one); AssertionRefused when there is
   * none. Its assertions and its request objects (./request-object.ts) are signed with the same keys.
   */
  async keyOf(client: Client, kid: string | undefined): Promise<KeyObject> {
    const named = kid === undefined ? 'no kid (the client has several keys)' : `kid ${JSON.stringify(kid).slice(0, 80)}`;
    let key: KeyObject | undefined;
    if (client.jwks) key = this.inlineKey(client.jwks, kid);
    else if (client.jwks_uri) {
      try {
        key = await this.remoteKeys(client.jwks_uri).key(kid);
      } catch (err) {
        // The guard's refusal names the address the name resolved to: logged, not told.
        const refused = err instanceof AddressRefused;
        const why = refused ? 'its address is one this box does not fetch from (special-use, or its own)' : errorMessage(err);
        const failure = new AssertionRefused(`the client's keys could not be fetched from its jwks_uri (${why}); try again later`, {
          cause: err,
        });
        if (refused) failure.detail = errorMessage(err);
        throw failure;
      }
    } else throw new AssertionRefused(`client "${client.id}" has no keys (jwks or jwks_uri): it cannot sign its own assertions`);
    if (!key) throw new AssertionRefused(`unknown kid: the client's keys hold no key for ${named}`);
    return key;
  }

  /**
   * Authenticates `client` by `assertion` (private_key_jwt), now: resolves once the assertion is
   * accepted and its jti spent; AssertionRefused naming the rule otherwise.
   */
  async authenticate(client: Client, assertion: string, nowMs = Date.now()): Promise<void> {
    if (!(await this.ledger.firstSeen(await this.accept(client, assertion, nowMs)))) throw new AssertionRefused(REPLAYED);
  }

  /** Spends `proof` in the box's replay ledger: true the first time, false for a replay (./request-object.ts). */
  spend(proof: SeenProof): Promise<boolean> {
    return this.ledger.firstSeen(proof);
  }

  /**
   * Whether `assertion` authenticates `client` now, all but replay: the jti to spend, which the caller
   * must spend before it answers (the ledger, or the statement that writes the token's session:
   * api/store/sessions.ts insertSessionsSpending); AssertionRefused naming the rule otherwise.
   */
  async accept(client: Client, assertion: string, nowMs = Date.now()): Promise<SeenProof> {
    const jwt = assertionParts(assertion);
    if ('problem' in jwt) throw new AssertionRefused(jwt.problem);
    const alg = assertionAlg(jwt);
    if (typeof alg !== 'string') throw new AssertionRefused(alg.problem);
    const kid = jwt.header.kid;
    if (kid !== undefined && typeof kid !== 'string') throw new AssertionRefused('unknown kid: kid must be a string');
    const key = await this.keyOf(client, kid);
    const verdict = checkClientAssertion(jwt, alg, key, {
      clientId: client.id,
      issuer: this.config.baseUrl,
      now: Math.floor(nowMs / 1000),
    });
    if ('problem' in verdict) throw new AssertionRefused(verdict.problem);
    // The jti is spent per client (another client's jti is its own), until the assertion could not be
    // taken anyway; the digest's prefix keeps it apart from DPoP proofs', which share the ledger. The
    // id and jti are JSON-quoted, not joined by a dot: both may hold dots, and client "a" spending jti
    // "b.c" must not spend jti "c" of client "a.b".
    const digest = createHash('sha256')
      .update(`client_assertion.${JSON.stringify([client.id, verdict.jti])}`)
      .digest();
    return { digest, expiresAt: new Date((verdict.exp + SKEW_SECONDS + 1) * 1000) };
  }
}
