// An issuer's signing keys, fetched on first use and again only when a token
// names a key we do not have (the issuer rotated) — never on every request —
// and at most every MIN_REFETCH_MS, so a flood of tokens with made-up key ids
// cannot turn into a flood of fetches.
import crypto, { type JsonWebKey, type KeyObject } from 'node:crypto';

const MIN_REFETCH_MS = 10_000;
/** Keys are re-read after this long even without an unknown kid, so retired keys stop verifying. */
const MAX_AGE_MS = 3600_000;

export class RemoteKeySet {
  private keys = new Map<string, KeyObject>();
  /** The set's key when it holds exactly one, which a token may then use without naming it (OpenID Connect Core §10.1). */
  private only: KeyObject | undefined;
  private fetchedAt = 0;
  private attemptedAt = 0;
  private lastError: Error | undefined;
  private pending: Promise<void> | undefined;

  constructor(
    private readonly fetchKeys: () => Promise<JsonWebKey[]>,
    private readonly onFetch: () => void,
    /** How long a fetched set stands before it is read again (a SPIFFE bundle's refresh hint); MAX_AGE_MS by default. */
    private readonly maxAgeMs: () => number = () => MAX_AGE_MS,
  ) {}

  private refresh(): Promise<void> {
    this.pending ??= (async () => {
      this.attemptedAt = Date.now();
      try {
        this.onFetch();
        const jwks = await this.fetchKeys();
        const keys = new Map<string, KeyObject>();
        const usable: KeyObject[] = [];
        for (const jwk of jwks) {
          if (jwk.use !== undefined && jwk.use !== 'sig') continue;
          try {
            const key = crypto.createPublicKey({ key: jwk, format: 'jwk' });
            usable.push(key);
            if (typeof jwk.kid === 'string') keys.set(jwk.kid, key);
          } catch {
            // a key type we cannot use is skipped
          }
        }
        this.keys = keys;
        this.only = jwks.length === 1 ? usable[0] : undefined;
        this.fetchedAt = Date.now();
        this.lastError = undefined;
      } catch (err) {
        this.lastError = err as Error;
        throw err;
      } finally {
        this.pending = undefined;
      }
    })();
    return this.pending;
  }

  /**
   * Whether `key` (one this set handed out) is still in it: a signature checked with a key the
   * publisher has since removed is checked no longer. A set read again holds new objects, so a
   * remembered verification is then made once more.
   */
  holds(key: KeyObject): boolean {
    return this.only === key || [...this.keys.values()].includes(key);
  }

  /** The key `kid` names; without a kid, the set's only key. */
  async key(kid: string | undefined): Promise<KeyObject | undefined> {
    const now = Date.now();
    const stale = now - this.fetchedAt > this.maxAgeMs() || (kid === undefined ? !this.only : !this.keys.has(kid));
    // A fetch under way answers this request too: a pod's first requests, all at once, wait for its
    // first keys, rather than all but one being told the key is not published. Else, until a first
    // fetch succeeds, retry each second; after that, every MIN_REFETCH_MS at most.
    if (stale && this.pending) await this.pending;
    else if (stale && now - this.attemptedAt > (this.fetchedAt ? MIN_REFETCH_MS : 1000)) await this.refresh();
    if (!this.keys.size && !this.only && this.lastError) throw this.lastError;
    return kid === undefined ? this.only : this.keys.get(kid);
  }
}
