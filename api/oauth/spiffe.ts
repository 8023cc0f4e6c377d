// SPIFFE client authentication with a JWT-SVID (draft-ietf-oauth-spiffe-client-auth-02, June 2026,
// §4: a profile of RFC 7523 with client_assertion_type urn:ietf:params:oauth:client-assertion-type:jwt-spiffe).
// What the profile changes from a client assertion of RFC 7523: `sub` is the workload's SPIFFE ID
// (SPIFFE-ID §2), `iss` is optional, `jti` is optional (a SPIFFE agent hands the same JWT-SVID to a
// workload until it nears its exp), and the keys are the trust domain's, read from its SPIFFE bundle
// endpoint (SPIFFE Trust Domain and Bundle §4-5: a JWK Set whose keys have `use: jwt-svid` or
// `x509-svid`, with `spiffe_sequence` and `spiffe_refresh_hint`). Which trust domains the box trusts
// and where their bundles are is the admin's word (Box.spec.spiffeTrustDomains); which SPIFFE IDs
// authenticate a Client is the Client's (auth.spiffe.ids). A jti, when present, is spent in the replay
// ledger private_key_jwt uses (../store/dpop-proofs.ts). Every refusal is a WorkloadError naming
// the rule that failed, never a key.
import { createHash, type JsonWebKey } from 'node:crypto';
import type { Config, SpiffeTrustDomain } from '../config.js';
import { TRUST_DOMAIN } from '../config.js';
import { Snapshot } from '../cache/snapshot.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { ChangeFeed } from '../db/notify.js';
import type { Pool } from '../db/pool.js';
import { assertionParts } from './client-assertion.js';
import { fetchClientDocument } from '../document-fetch.js';
import type { ProofLedger } from '../store/dpop-proofs.js';
import { clients } from '../store/clients.js';
import type { Stored } from '../store/resources.js';
import type { Client } from '../types.js';
import { VerifiedAssertions } from '../credentials/workload/assertion.js';
import { verifySignature, WorkloadError } from '../credentials/workload/issuers.js';
import { RemoteKeySet } from '../credentials/workload/keys.js';

export const JWT_SPIFFE = 'urn:ietf:params:oauth:client-assertion-type:jwt-spiffe';
/** Clock skew allowed between the trust domain's signer and the box (as for other assertions). */
const SKEW_SECONDS = 60;
/** The most of a bundle read: it holds the X.509 roots too. */
const MAX_BUNDLE_BYTES = 512 * 1024;
/** A bundle without a refresh hint is read again after this long (SPIFFE Trust Domain and Bundle §4.1.2 leaves it to the consumer). */
const DEFAULT_REFRESH_SECONDS = 300;
/**
 * The longest a refresh hint is honoured: a bundle that says "a day" is read again hourly all the same,
 * as other issuers' keys are (../credentials/workload/keys.ts), so that a key the trust domain removed
 * stops verifying within the hour.
 */
const MAX_REFRESH_SECONDS = 3_600;

/** A SPIFFE ID, parsed. */
export interface SpiffeId {
  id: string;
  trustDomain: string;
  /** The path, with its leading slash ("" for the trust domain's own ID). */
  path: string;
}

/** A path segment of a SPIFFE ID (SPIFFE-ID §2.2: letters, digits, ".", "-", "_"; never "." or ".."). */
const SEGMENT = /^[A-Za-z0-9._-]+$/;

/** `value` as a SPIFFE ID of a workload (SPIFFE-ID §2: spiffe://<trust domain>/<path>, at most 2048 bytes), or undefined. */
export function parseSpiffeId(value: unknown): SpiffeId | undefined {
  if (typeof value !== 'string' || value.length > 2048 || !value.startsWith('spiffe://')) return undefined;
  const rest = value.slice('spiffe://'.length);
  const slash = rest.indexOf('/');
  const trustDomain = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash);
  if (!TRUST_DOMAIN.test(trustDomain)) return undefined;
  // A workload's ID has a path (SPIFFE-ID §2.2); the trust domain's own ID names no workload.
  const segments = path.split('/').slice(1);
  if (!segments.length || segments.some((s) => !SEGMENT.test(s) || s === '.' || s === '..')) return undefined;
  return { id: value, trustDomain, path };
}

/*
 * A Client's auth.spiffe.ids entry is a workload's SPIFFE ID, exact, or a prefix ending in "/*": every
 * ID of that trust domain whose path starts with the prefix's path and goes on by at least one segment.
 * The prefix keeps at least one segment (the CRD's pattern: never "spiffe://td/*", the whole trust
 * domain, nor a bare "*"), and names its trust domain: it never matches another trust domain's IDs.
 */

/** Whether `id` is the workload `entry` names (exact, or under a "/*" prefix, in the same trust domain). */
export function spiffeIdMatches(entry: string, id: SpiffeId): boolean {
  if (!entry.endsWith('/*')) return entry === id.id;
  const prefix = parseSpiffeId(entry.slice(0, -2));
  return prefix !== undefined && prefix.trustDomain === id.trustDomain && id.path.startsWith(`${prefix.path}/`);
}

/** The SPIFFE IDs (and prefixes) a Client is bound to (auth.spiffe.ids), if any. */
export function spiffeIdsOf(client: Client): readonly string[] {
  return client.auth?.spiffe?.ids ?? [];
}

/** Who a JWT-SVID said the workload is, once accepted. */
export interface SpiffeIdentity {
  spiffeId: string;
  trustDomain: string;
}

/** What an accepted JWT-SVID leaves: its workload, and its jti for the ledger when it has one. */
export interface AcceptedSvid {
  id: SpiffeId;
  exp: number;
  jti: string | undefined;
}

/**
 * Whether the claims of a JWT-SVID, its signature already verified by its trust domain's key, are
 * for this box now (all but the client's binding and the ledger); the rule that failed otherwise.
 */
export function checkSvidClaims(
  payload: Record<string, unknown>,
  rules: { issuer: string; now: number },
): AcceptedSvid | { problem: string } {
  const id = parseSpiffeId(payload.sub);
  if (!id) return { problem: 'sub must be the SPIFFE ID of a workload (spiffe://<trust domain>/<path>)' };
  // JWT-SVID §3.2 lets one SVID name several audiences; the draft's §4 and RFC 7523 §3 ask for this
  // box among them; draft-ietf-oauth-rfc7523bis narrows it to the issuer identifier alone, so that an
  // SVID made for another server (which may have been told this box's token endpoint is its own) is
  // never taken here.
  const aud = payload.aud;
  const audiences = Array.isArray(aud) ? aud : [aud];
  if (audiences.length !== 1 || audiences[0] !== rules.issuer)
    return {
      problem: `audience: aud must be this box's issuer identifier "${rules.issuer}" alone (fetch the JWT-SVID with that one audience)`,
    };
  const { exp, nbf, iat, jti, iss } = payload;
  // JWT-SVID §3.3: exp is required. An SVID past its exp is refused, however often it was accepted before.
  if (typeof exp !== 'number') return { problem: 'expired: the JWT-SVID has no exp' };
  if (exp + SKEW_SECONDS <= rules.now)
    return { problem: `expired: the JWT-SVID's exp was ${new Date(exp * 1000).toISOString()}; fetch a new one from the Workload API` };
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf - SKEW_SECONDS > rules.now)) return { problem: 'not yet valid: nbf is ahead' };
  if (iat !== undefined && (typeof iat !== 'number' || iat - SKEW_SECONDS > rules.now))
    return { problem: 'issued in the future: iat is ahead; check the clocks' };
  // The draft makes iss optional (a SPIRE server sets it only when configured with jwt_issuer); when
  // present it is a string, and not trusted for anything: the trust domain of sub picks the keys.
  if (iss !== undefined && typeof iss !== 'string') return { problem: 'iss, when present, must be a string' };
  if (jti !== undefined && (typeof jti !== 'string' || !jti.length || jti.length > 256))
    return { problem: 'jti, when present, must be a string of 1 to 256 characters' };
  return { id, exp, jti };
}

/** The key sets of the trust domains the box trusts, read from their bundle endpoints. */
class TrustDomainBundle {
  /** The refresh hint of the last bundle read, in seconds. */
  private refreshSeconds = DEFAULT_REFRESH_SECONDS;
  readonly keys: RemoteKeySet;

  constructor(
    readonly domain: SpiffeTrustDomain,
    config: Pick<Config, 'baseUrl' | 'clientMetadata'>,
    onFetch: () => void,
  ) {
    this.keys = new RemoteKeySet(
      async () => {
        // Through the guard for addresses others name (../outbound.ts): a bundle endpoint at a
        // loopback, link-local or private address is fetched only when the admin allowed that range for
        // this trust domain; no redirect is followed.
        const { body } = await fetchClientDocument(domain.bundleEndpointUrl, {
          allowed: domain.allowedAddresses,
          timeoutMs: config.clientMetadata.timeoutMs,
          boxUrl: config.baseUrl,
          maxBytes: MAX_BUNDLE_BYTES,
          ...(domain.caBundle ? { ca: domain.caBundle } : {}),
        });
        const bundle = body as { keys?: unknown; spiffe_refresh_hint?: unknown };
        if (!bundle || typeof bundle !== 'object' || !Array.isArray(bundle.keys))
          throw new Error('the bundle endpoint answered no JWK Set (keys)');
        const hint = bundle.spiffe_refresh_hint;
        this.refreshSeconds = typeof hint === 'number' && hint > 0 ? Math.min(hint, MAX_REFRESH_SECONDS) : DEFAULT_REFRESH_SECONDS;
        // SPIFFE Trust Domain and Bundle §4.2.1: a key's use says what it verifies; only jwt-svid keys
        // verify JWT-SVIDs (an x509-svid key is a root CA's, for item 3's mTLS). Each must name its kid
        // (JWT-SVID §6.2). They are handed on as signature keys.
        return (bundle.keys as JsonWebKey[])
          .filter((k) => k && typeof k === 'object' && k.use === 'jwt-svid' && typeof k.kid === 'string')
          .map(({ use: _use, ...key }) => key);
      },
      onFetch,
      () => this.refreshSeconds * 1000,
    );
  }
}

/** Clients bound to SPIFFE IDs, in memory: a request that names no client_id is routed by its SPIFFE ID. */
class SpiffeBindings {
  private readonly index: Snapshot<{ id: string; entries: readonly string[] }[]>;

  constructor(pool: Pool, feed: ChangeFeed) {
    this.index = new Snapshot(feed, ['clients'], async () =>
      (await clients.withSpiffe(pool)).map((client) => ({ id: client.id, entries: spiffeIdsOf(client) })),
    );
  }

  async clientsOf(id: SpiffeId): Promise<string[]> {
    return (await this.index.get()).filter((c) => c.entries.some((e) => spiffeIdMatches(e, id))).map((c) => c.id);
  }
}

/**
 * JWT-SVID client authentication: the trust domains' bundles (cached; read again on an unknown kid,
 * at most every 10 s, and when the bundle's refresh hint has passed), the signatures already verified
 * (an agent hands out one SVID for minutes: its signature is checked once), and the replay ledger.
 */
export class SpiffeClientAuth {
  private readonly bundles = new Map<string, TrustDomainBundle>();
  private readonly verified = new VerifiedAssertions();
  private readonly bindings: SpiffeBindings | undefined;

  constructor(
    private readonly config: Pick<Config, 'baseUrl' | 'clientMetadata' | 'spiffeTrustDomains'>,
    private readonly ledger: Pick<ProofLedger, 'firstSeen'>,
    db: { pool: Pool; feed: ChangeFeed } | undefined,
    onFetch: (trustDomain: string) => void = () => {},
  ) {
    for (const domain of config.spiffeTrustDomains)
      this.bundles.set(domain.trustDomain, new TrustDomainBundle(domain, config, () => onFetch(domain.trustDomain)));
    this.bindings = db && new SpiffeBindings(db.pool, db.feed);
  }

  /** Whether any trust domain is trusted: only then is the method offered (discovery). */
  get enabled(): boolean {
    return this.bundles.size > 0;
  }

  /** The verified claims of `svid`: remembered, or its signature checked now with its trust domain's key. */
  private async verifiedClaims(svid: string, nowMs: number): Promise<Record<string, unknown>> {
    const digest = createHash('sha256').update(svid).digest('hex');
    const known = this.verified.get(digest, nowMs, (trustDomain, key) => this.bundles.get(trustDomain)?.keys.holds(key) ?? false);
    if (known) return known.payload;
    const jwt = assertionParts(svid);
    if ('problem' in jwt) throw new WorkloadError(jwt.problem);
    const id = parseSpiffeId(jwt.payload.sub);
    if (!id) throw new WorkloadError('sub must be the SPIFFE ID of a workload (spiffe://<trust domain>/<path>)');
    const bundle = this.bundles.get(id.trustDomain);
    // Which trust domains are trusted is not said: anyone may send a JWT naming any.
    if (!bundle)
      throw new WorkloadError(
        `trust domain not trusted: ${id.trustDomain} is not one of this box's SPIFFE trust domains; add it to the Box's spec.spiffeTrustDomains`,
      );
    const { alg, kid, typ } = jwt.header;
    // JWT-SVID §2.1-2.3: signed (RS/ES/PS, never none or HMAC), kid required, typ JWT or JOSE when set.
    if (typeof alg !== 'string' || !/^(RS|ES)(256|384|512)$/.test(alg))
      throw new WorkloadError(`alg not allowed: ${JSON.stringify(alg)}; a JWT-SVID is signed with RS256/384/512 or ES256/384/512`);
    if (typ !== undefined && typ !== 'JWT' && typ !== 'JOSE') throw new WorkloadError('typ, when present, must be JWT or JOSE');
    if (typeof kid !== 'string' || !kid.length) throw new WorkloadError('unknown kid: a JWT-SVID must name its key (kid)');
    let key;
    try {
      key = await bundle.keys.key(kid);
    } catch (err) {
      // Why goes to the log (its cause), not to the requester: it may name an address the guard refused.
      throw new WorkloadError(
        `the bundle of trust domain ${id.trustDomain} could not be fetched (the box's log says why); try again later`,
        {
          cause: err,
        },
      );
    }
    if (!key)
      throw new WorkloadError(
        `unknown kid: the bundle of trust domain ${id.trustDomain} holds no JWT-SVID key ${JSON.stringify(kid).slice(0, 80)}`,
      );
    if (!verifySignature(alg, key, jwt))
      throw new WorkloadError(`bad signature: the JWT-SVID does not verify with the key of trust domain ${id.trustDomain} it names`);
    this.verified.remember(digest, { issuer: id.trustDomain, payload: jwt.payload, key }, nowMs);
    return jwt.payload;
  }

  /**
   * The client a JWT-SVID authenticates (client_id's, or the one client bound to its SPIFFE ID), and
   * who the workload is; WorkloadError naming the rule that failed otherwise.
   */
  async authenticate(
    svc: { clients: RecordCache<Stored<Client>> },
    svid: string,
    clientId: string | undefined,
    nowMs = Date.now(),
  ): Promise<{ client: Stored<Client>; identity: SpiffeIdentity }> {
    const payload = await this.verifiedClaims(svid, nowMs);
    const verdict = checkSvidClaims(payload, { issuer: this.config.baseUrl, now: Math.floor(nowMs / 1000) });
    if ('problem' in verdict) throw new WorkloadError(verdict.problem);
    const { id } = verdict;
    let client: Stored<Client> | undefined;
    if (clientId !== undefined) client = await svc.clients.get(clientId);
    else {
      const ids = (await this.bindings?.clientsOf(id)) ?? [];
      if (ids.length > 1) throw new WorkloadError(`SPIFFE ID ${id.id} is bound to several clients; send client_id`);
      client = ids[0] === undefined ? undefined : await svc.clients.get(ids[0]);
    }
    // An unknown client and one that does not take this ID get one answer: the SVID must not tell which clients exist.
    if (!client || !spiffeIdsOf(client.resource).some((e) => spiffeIdMatches(e, id)))
      throw new WorkloadError(
        `SPIFFE ID not bound: ${id.id} authenticates no client${clientId === undefined ? '' : ` "${clientId}"`} (auth.spiffe.ids)`,
      );
    if (verdict.jti !== undefined) {
      // The jti is the trust domain's, spent per SPIFFE ID until the SVID could not be taken anyway; the
      // prefix keeps it apart from DPoP proofs' and private_key_jwt's, which share the ledger.
      const digest = createHash('sha256')
        .update(`jwt_spiffe.${JSON.stringify([id.id, verdict.jti])}`)
        .digest();
      if (!(await this.ledger.firstSeen({ digest, expiresAt: new Date((verdict.exp + SKEW_SECONDS + 1) * 1000) })))
        throw new WorkloadError('replayed jti: this JWT-SVID was already used (one with a jti is single use)');
    }
    return { client, identity: { spiffeId: id.id, trustDomain: id.trustDomain } };
  }
}
