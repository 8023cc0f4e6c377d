// The box's JWT signing keys in memory: one active key signs, every key still
// stored verifies and is published at /.well-known/jwks.json. Keys live in the
// database so all processes of a box share them; a change on one process reaches
// the others through the change feed.
import { errorMessage } from '../errors.js';
import crypto, { type JsonWebKey } from 'node:crypto';
import type { Config, JwtAlg } from '../config.js';
import { withTransaction, type Pool } from '../db/pool.js';
import { insertKey, listKeys, retireOthers, deleteKeys, type KeyRow } from '../store/keys.js';
import { kidsInUse } from '../store/sessions.js';
import { algOf, generateKeyPair, signingKey, thumbprint, type SigningKey } from './jwt.js';

export class Keyring {
  private keys = new Map<string, SigningKey>();
  private published: JsonWebKey[] = [];
  private current: SigningKey | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly config: Pick<Config, 'jwtAlg' | 'signingKeyPem' | 'keyRotationDays'>,
  ) {}

  get active(): SigningKey {
    if (!this.current) throw new Error('no active signing key');
    return this.current;
  }

  find = (kid: string): SigningKey | undefined => this.keys.get(kid);

  jwks(): { keys: JsonWebKey[] } {
    return { keys: this.published };
  }

  async load(): Promise<void> {
    const rows = await listKeys(this.pool);
    const keys = new Map<string, SigningKey>();
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
    }
    this.keys = keys;
    this.published = published;
    const active = rows.find((r) => r.retiredAt === null);
    this.current = active && keys.get(active.id);
  }

  /**
   * Makes sure a key of the configured kind signs: the key given in
   * BOXAUTH_SIGNING_KEY, or a generated one that is replaced when older than the
   * rotation period or of another algorithm. Runs under an advisory lock so
   * processes starting together create one key, not several.
   */
  async ensureActive(now = new Date()): Promise<void> {
    await withTransaction(this.pool, async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('boxauth.keys.' || current_schema()))");
      const rows = await listKeys(tx);
      const active = rows.find((r) => r.retiredAt === null);
      const wanted = this.config.signingKeyPem ? externalKey(this.config.signingKeyPem) : undefined;
      if (wanted) {
        if (active?.id !== wanted.id) {
          await insertKey(tx, wanted);
          await retireOthers(tx, wanted.id);
        }
        return;
      }
      const maxAgeMs = this.config.keyRotationDays * 86_400_000;
      const stale =
        !active ||
        active.external ||
        active.alg !== this.config.jwtAlg ||
        (maxAgeMs > 0 && now.getTime() - active.createdAt.getTime() > maxAgeMs);
      if (stale) {
        const key = newKey(this.config.jwtAlg);
        await insertKey(tx, key);
        await retireOthers(tx, key.id);
      }
    });
    await this.load();
  }

  /** Deletes retired keys that no live session's JWT was signed with. */
  async dropUnusedRetiredKeys(): Promise<string[]> {
    const retired = (await listKeys(this.pool)).filter((k) => k.retiredAt !== null).map((k) => k.id);
    const inUse = new Set(await kidsInUse(this.pool, retired));
    const unused = retired.filter((id) => !inUse.has(id));
    await deleteKeys(this.pool, unused);
    return unused;
  }
}

type NewKey = Omit<KeyRow, 'createdAt' | 'retiredAt'>;

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
