// The box's JWT signing keys in memory. Each algorithm the box signs with (ES256,
// RS256, EdDSA) has one active key; every key still stored verifies and is
// published at /.well-known/jwks.json. Access tokens are signed with the key of
// BOXAUTH_JWT_ALG (or BOXAUTH_SIGNING_KEY); ID tokens with the algorithm their
// client registered (id_token_signed_response_alg), RS256 unless it chose: OpenID
// Connect Core §15.1 makes RS256 the one every relying party must accept. Keys
// live in the database so all processes of a box share them; a change on one
// process reaches the others through the change feed.
import { errorMessage } from '../errors.js';
import crypto, { type JsonWebKey } from 'node:crypto';
import { JWT_ALGS, type Config, type JwtAlg } from '../config.js';
import { withTransaction, type Pool } from '../db/pool.js';
import { insertKey, listKeys, lockKeyRotation, retireOthers, deleteKeys, type KeyRow } from '../store/keys.js';
import { kidsInUse } from '../store/sessions.js';
import { algOf, generateKeyPair, signingKey, thumbprint, type SigningKey } from './jwt.js';

/** How long a retired key stays published at least: the longest an ID token it signed can live (id_token_expiration). */
const RETIRED_KEY_GRACE_MS = 86_400_000;

export class Keyring {
  private keys = new Map<string, SigningKey>();
  private published: JsonWebKey[] = [];
  private actives = new Map<JwtAlg, SigningKey>();
  private accessAlg: JwtAlg;

  constructor(
    private readonly pool: Pool,
    private readonly config: Pick<Config, 'jwtAlg' | 'signingKeyPem' | 'keyRotationDays'>,
  ) {
    this.accessAlg = config.signingKeyPem ? externalKey(config.signingKeyPem).alg : config.jwtAlg;
  }

  /** The key access tokens are signed with. */
  get active(): SigningKey {
    return this.activeFor(this.accessAlg);
  }

  /** The active key of `alg` (ID tokens: the client's id_token_signed_response_alg). */
  activeFor(alg: JwtAlg): SigningKey {
    const key = this.actives.get(alg);
    if (!key) throw new Error(`no active ${alg} signing key`);
    return key;
  }

  /** The algorithms ID tokens can be signed with, RS256 first (discovery). */
  get algorithms(): JwtAlg[] {
    return ['RS256', ...JWT_ALGS.filter((a) => a !== 'RS256')];
  }

  find = (kid: string): SigningKey | undefined => this.keys.get(kid);

  jwks(): { keys: JsonWebKey[] } {
    return { keys: this.published };
  }

  async load(): Promise<void> {
    const rows = await listKeys(this.pool);
    const keys = new Map<string, SigningKey>();
    const actives = new Map<JwtAlg, SigningKey>();
    const published: JsonWebKey[] = [];
    for (const row of rows) {
      const key = signingKey(
        row.id,
        row.alg as JwtAlg,
        crypto.createPrivateKey({ key: row.privateJwk, format: 'jwk' }),
        crypto.createPublicKey({ key: row.publicJwk, format: 'jwk' }),
      );
      keys.set(row.id, key);
      published.push({ ...row.publicJwk, kid: row.id, alg: row.alg, use: 'sig' });
      // Rows come newest first: the first unretired key of an algorithm is its active one.
      if (row.retiredAt === null && !actives.has(key.alg)) actives.set(key.alg, key);
    }
    this.keys = keys;
    this.published = published;
    this.actives = actives;
  }

  /**
   * Makes sure each algorithm has a key that signs: for the algorithm of
   * BOXAUTH_SIGNING_KEY that key, else a generated one, replaced when older than
   * the rotation period (retiring the old one of its algorithm only). Runs under
   * an advisory lock so processes starting together create one key each, not several.
   */
  async ensureActive(now = new Date()): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
      await lockKeyRotation(tx);
      const rows = await listKeys(tx);
      const wanted = this.config.signingKeyPem ? externalKey(this.config.signingKeyPem) : undefined;
      const maxAgeMs = this.config.keyRotationDays * 86_400_000;
      for (const alg of JWT_ALGS) {
        const active = rows.find((r) => r.retiredAt === null && r.alg === alg);
        if (wanted?.alg === alg) {
          if (active?.id !== wanted.id) {
            await insertKey(tx, wanted);
            await retireOthers(tx, wanted.id, alg);
          }
          continue;
        }
        const stale = !active || active.external || (maxAgeMs > 0 && now.getTime() - active.createdAt.getTime() > maxAgeMs);
        if (stale) {
          const key = newKey(alg);
          await insertKey(tx, key);
          await retireOthers(tx, key.id, alg);
        }
      }
    });
    await this.load();
  }

  /**
   * Deletes retired keys that nothing may still need: no live session's JWT was
   * signed with them, and they retired longer ago than an ID token lives.
   */
  async dropUnusedRetiredKeys(now = Date.now()): Promise<string[]> {
    const retired = (await listKeys(this.pool))
      .filter((k) => k.retiredAt !== null && now - k.retiredAt.getTime() > RETIRED_KEY_GRACE_MS)
      .map((k) => k.id);
    const inUse = new Set(await kidsInUse(this.pool, retired));
    const unused = retired.filter((id) => !inUse.has(id));
    await deleteKeys(this.pool, unused);
    return unused;
  }
}

type NewKey = Omit<KeyRow, 'createdAt' | 'retiredAt' | 'alg'> & { alg: JwtAlg };

function rowFor(privateKey: crypto.KeyObject, external: boolean): NewKey {
  const publicKey = crypto.createPublicKey(privateKey);
  const publicJwk = publicKey.export({ format: 'jwk' });
  return { id: thumbprint(publicJwk), alg: algOf(privateKey), privateJwk: privateKey.export({ format: 'jwk' }), publicJwk, external };
}

function newKey(alg: JwtAlg): NewKey {
  return rowFor(generateKeyPair(alg).privateKey, false);
}

function externalKey(pem: string): NewKey {
  try {
    return rowFor(crypto.createPrivateKey(pem), true);
  } catch (err) {
    throw new Error(`BOXAUTH_SIGNING_KEY is not a usable private key: ${errorMessage(err)}`, { cause: err });
  }
}
