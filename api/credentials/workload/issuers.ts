// The issuers of workload tokens a box trusts: those of BOXAUTH_TRUSTED_ISSUERS
// (Box.spec.trustedIssuers), and the service-account issuer of the cluster the
// box runs in, discovered from its API server. Each checks a token's signature
// its own way: with the issuer's published keys (jwks), or by asking the API
// server (TokenReview) when the keys cannot be reached.
import { errorMessage } from '../../errors.js';
import crypto, { type JsonWebKey, type KeyObject } from 'node:crypto';
import type { Config, TrustedIssuer } from '../../config.js';
import { HttpsError, kubeCredentials, requestJson } from '../../kube/https.js';
import type { Logger } from '../../log.js';
import { RemoteKeySet } from './keys.js';

/** A refusal of a workload token, with a description a person can act on. */
export class WorkloadError extends Error {}

export interface JwtParts {
  header: Record<string, unknown>;
  payload: Record<string, unknown>;
  signingInput: Buffer;
  signature: Buffer;
}

export interface IssuerVerifier {
  issuer: string;
  /** The service-account issuer of the cluster the box runs in (whose tokens only auth.workload.serviceAccounts bind). */
  cluster: boolean;
  /**
   * Whether a verified token may be remembered (for its life, at most a minute):
   * a signature checked against published keys stays checked; a TokenReview is
   * asked every time, since its purpose is the API server's word now.
   */
  cacheable: boolean;
  /** Throws WorkloadError unless the token is genuinely the issuer's; the key that verified it, when one did. */
  verify(token: string, jwt: JwtParts): Promise<KeyObject | undefined>;
  /** Whether `key`, which verified a token before, still stands (see RemoteKeySet.holds). */
  holds(key: KeyObject): boolean;
}

const ALGS: Record<string, { hash: string; ec: boolean }> = {
  RS256: { hash: 'sha256', ec: false },
  RS384: { hash: 'sha384', ec: false },
  RS512: { hash: 'sha512', ec: false },
  ES256: { hash: 'sha256', ec: true },
  ES384: { hash: 'sha384', ec: true },
  ES512: { hash: 'sha512', ec: true },
};

export function verifySignature(alg: string, key: KeyObject, jwt: JwtParts): boolean {
  const a = ALGS[alg];
  if (!a || (key.asymmetricKeyType === 'ec') !== a.ec) return false;
  return crypto.verify(a.hash, jwt.signingInput, a.ec ? { key, dsaEncoding: 'ieee-p1363' } : key, jwt.signature);
}

class JwksVerifier implements IssuerVerifier {
  readonly cacheable = true;

  constructor(
    readonly issuer: string,
    private readonly keys: RemoteKeySet,
    readonly cluster: boolean,
  ) {}

  holds(key: KeyObject): boolean {
    return this.keys.holds(key);
  }

  async verify(_token: string, jwt: JwtParts): Promise<KeyObject> {
    const { alg, kid } = jwt.header;
    if (typeof alg !== 'string' || !ALGS[alg])
      throw new WorkloadError(`the token's algorithm ${String(alg)} is not accepted (RS256/384/512, ES256/384/512 are)`);
    if (typeof kid !== 'string') throw new WorkloadError('the token names no signing key (kid)');
    let key: KeyObject | undefined;
    try {
      key = await this.keys.key(kid);
    } catch (err) {
      // Why goes to the log (TrustedIssuers), not to the requester: it may name an address the guard refused.
      throw new WorkloadError(`the signing keys of issuer ${this.issuer} could not be fetched (the box's log says why); try again later`, {
        cause: err,
      });
    }
    if (!key) throw new WorkloadError(`the token was signed by a key issuer ${this.issuer} does not publish (kid ${kid})`);
    if (!verifySignature(alg, key, jwt))
      throw new WorkloadError(`the token's signature does not verify with the keys of issuer ${this.issuer}`);
    return key;
  }
}

/** Asks the cluster's API server whether it issued the token (authentication.k8s.io TokenReview). */
class TokenReviewVerifier implements IssuerVerifier {
  readonly cacheable = false;

  constructor(
    readonly issuer: string,
    private readonly config: Config,
    readonly cluster: boolean,
  ) {}

  holds(): boolean {
    return false; // nothing is remembered: each token is reviewed
  }

  async verify(token: string, jwt: JwtParts): Promise<undefined> {
    const kube = kubeCredentials(this.config.kube);
    if (!kube) throw new WorkloadError("this box cannot reach its cluster's API server to review the token");
    let review: { status?: { authenticated?: boolean; error?: string; user?: { username?: string } } };
    try {
      review = await requestJson(`${kube.url}/apis/authentication.k8s.io/v1/tokenreviews`, {
        method: 'POST',
        token: kube.token,
        ca: kube.ca,
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences: tokenAudiences(this.config) } },
      });
    } catch (err) {
      throw new WorkloadError(`the cluster's API server could not review the token (${errorMessage(err)})`, { cause: err });
    }
    if (!review.status?.authenticated) {
      throw new WorkloadError(
        `the cluster's API server does not accept the token${review.status?.error ? `: ${review.status.error}` : ''}`,
      );
    }
    if (review.status.user?.username !== jwt.payload.sub) throw new WorkloadError('the reviewed token belongs to another subject');
    return undefined;
  }
}

/** The audiences a workload token must be issued for: the box's URL or its token endpoint. */
export function tokenAudiences(config: Pick<Config, 'baseUrl'>): string[] {
  return [config.baseUrl, `${config.baseUrl}/auth/token`];
}

interface Discovery {
  issuer?: string;
  jwks_uri?: string;
}

/**
 * GET a trusted issuer's document (discovery, JWK Set) as JSON, through the box's guard for
 * addresses a third party names (api/document-fetch.ts: no special-use address but those
 * `allowed`, no redirect, bounded size and time). Injected by api/server.ts.
 */
export type IssuerDocumentFetch = (url: string, options: { ca?: string; allowed: [string, number][] }) => Promise<unknown>;

export class TrustedIssuers {
  private readonly configured = new Map<string, IssuerVerifier>();
  private cluster: IssuerVerifier | undefined;
  private discovering: Promise<IssuerVerifier | undefined> | undefined;
  private discoveredAt = 0;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    private readonly onKeysFetched: (issuer: string) => void,
    private readonly fetchDocument: IssuerDocumentFetch,
  ) {
    for (const trusted of config.trustedIssuers) this.configured.set(trusted.issuer, this.verifierFor(trusted));
  }

  private verifierFor(trusted: TrustedIssuer): IssuerVerifier {
    // A TokenReview asks this cluster's API server: what it vouches for is this cluster's.
    if (trusted.mode === 'tokenreview') return new TokenReviewVerifier(trusted.issuer, this.config, true);
    const options = { ...(trusted.caBundle ? { ca: trusted.caBundle } : {}), allowed: trusted.allowedAddresses };
    const keys = new RemoteKeySet(
      async () => {
        try {
          // The discovery document is the issuer's to write, and so is where its jwks_uri points: that
          // address is held to the guard as the issuer's own is (a loopback or link-local jwks_uri is refused).
          const discovered = trusted.jwksUri
            ? undefined
            : ((await this.fetchDocument(`${trusted.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, options)) as Discovery);
          const uri = trusted.jwksUri ?? discovered?.jwks_uri;
          if (typeof uri !== 'string' || !/^https:\/\/\S+$/.test(uri))
            throw new HttpsError(`the discovery document of ${trusted.issuer} names no https jwks_uri`);
          const jwks = (await this.fetchDocument(uri, options)) as { keys?: unknown };
          return Array.isArray(jwks?.keys) ? (jwks.keys as JsonWebKey[]) : [];
        } catch (err) {
          this.log.warn({ issuer: trusted.issuer, err: errorMessage(err) }, "could not fetch a trusted issuer's keys");
          throw err;
        }
      },
      () => this.onKeysFetched(trusted.issuer),
    );
    return new JwksVerifier(trusted.issuer, keys, false);
  }

  /** The cluster's own issuer, asked of its API server once (again after a failure, at most every 30 s). */
  private async clusterIssuer(): Promise<IssuerVerifier | undefined> {
    if (this.config.clusterIssuer === 'off' || this.cluster) return this.cluster;
    if (this.discovering && Date.now() - this.discoveredAt < 30_000) return this.discovering;
    this.discoveredAt = Date.now();
    this.discovering = this.discover().then(
      (found) => {
        this.cluster = found;
        return found;
      },
      (err: Error) => {
        this.log.warn({ err: err.message }, "could not discover the cluster's service-account issuer; will retry");
        return undefined;
      },
    );
    return this.discovering;
  }

  private async discover(): Promise<IssuerVerifier | undefined> {
    const kube = kubeCredentials(this.config.kube);
    if (!kube) return undefined; // not running in a cluster
    const found = await requestJson<Discovery>(`${kube.url}/.well-known/openid-configuration`, { token: kube.token, ca: kube.ca });
    if (!found.issuer) throw new HttpsError("the API server's discovery document names no issuer");
    const issuer = found.issuer;
    const mode = this.config.clusterIssuer === 'tokenreview' ? 'tokenreview' : 'jwks';
    this.log.info({ issuer, mode }, "trusting the cluster's service-account issuer");
    if (mode === 'tokenreview') return new TokenReviewVerifier(issuer, this.config, true);
    // The keys come from the API server itself, which this pod can always reach.
    return new JwksVerifier(
      issuer,
      new RemoteKeySet(
        async () => {
          const creds = kubeCredentials(this.config.kube);
          if (!creds) throw new HttpsError("the pod's service-account credentials are gone");
          return (
            (await requestJson<{ keys?: JsonWebKey[] }>(`${creds.url}/openid/v1/jwks`, { token: creds.token, ca: creds.ca })).keys ?? []
          );
        },
        () => this.onKeysFetched(issuer),
      ),
      true,
    );
  }

  async find(issuer: string): Promise<IssuerVerifier | undefined> {
    const configured = this.configured.get(issuer);
    if (configured) return configured;
    const cluster = await this.clusterIssuer();
    return cluster?.issuer === issuer ? cluster : undefined;
  }

  /** Whether `key` of `issuer`, which verified a token before, still stands (its issuer still publishes it). */
  holds(issuer: string, key: KeyObject): boolean {
    const verifier = this.configured.get(issuer) ?? (this.cluster?.issuer === issuer ? this.cluster : undefined);
    return verifier?.holds(key) ?? false;
  }

  /**
   * Whether `issuer` is the box's own cluster's: discovered from its API server, or an entry checked
   * by TokenReview (which asks that API server), or an entry that names the discovered issuer.
   */
  async isCluster(issuer: string): Promise<boolean> {
    if (this.configured.get(issuer)?.cluster) return true;
    return (await this.clusterIssuer())?.issuer === issuer;
  }
}
