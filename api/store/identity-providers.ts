// Upstream identity providers (migration 021): the provider records (a resource table, its secret
// sealed), which person each upstream identity is, and the sign-ins sent to a provider until they
// come back. What a link may be and when is api/people/upstream/'s business; here it is kept.
import type { Queryable, Transaction } from '../db/pool.js';
import type { IdentityProvider } from '../types.js';
import { ResourceTable, type Stored, type WriteOptions } from './resources.js';
import { lockForTransaction } from './box-locks.js';

/**
 * Where a provider's identities come from: its type and what names its issuer (the OpenID issuer,
 * the OAuth 2.0 service's addresses, GitHub's, the directory and where its people are, the SAML
 * entity ID and the attribute its subjects are read from). A subject
 * is unique only there: `123` at another issuer is someone else.
 */
function issuerOf(p: IdentityProvider): string {
  const where = {
    oidc: [p.oidc?.issuer],
    oauth2: [p.oauth2?.authorizationUrl, p.oauth2?.userinfoUrl],
    github: [p.github?.url, p.github?.apiUrl],
    ldap: [p.ldap?.url, p.ldap?.userSearch.baseDN, p.ldap?.userSearch.idAttribute],
    // The entity ID, not where its metadata is read: a metadata moved or a certificate renewed is the same provider.
    saml: [p.saml?.entityId, p.saml?.attributes?.subject],
  }[p.type];
  return JSON.stringify([p.type, ...where]);
}

class IdentityProviderTable extends ResourceTable<IdentityProvider> {
  /**
   * As every table writes; a provider whose issuer changed (issuerOf) loses its links, in the
   * same transaction: the identities linked were the old issuer's, and a subject of the new one
   * must not sign in as whoever had that subject at the old. People link again as on a first
   * sign-in.
   */
  override async write(
    db: Queryable,
    provider: IdentityProvider,
    opts: WriteOptions,
  ): Promise<{ stored: Stored<IdentityProvider>; created: boolean }> {
    const before = await this.read(db, provider.id);
    const written = await super.write(db, provider, opts);
    if (before && issuerOf(before.resource) !== issuerOf(provider)) {
      await db.query('DELETE FROM upstream_identities WHERE provider = $1', [provider.id]);
      await db.query('DELETE FROM upstream_unlinks WHERE provider = $1', [provider.id]);
    }
    return written;
  }
}

export const identityProviders = new IdentityProviderTable('identity_providers', 'IdentityProvider');

/** Which person an identity at a provider is. */
export interface UpstreamIdentity {
  provider: string;
  subject: string;
  userId: number;
  email: string | null;
  linkedAt: Date;
  lastUsedAt: Date;
}

interface IdentityRow {
  provider: string;
  subject: string;
  user_id: string;
  email: string | null;
  linked_at: Date;
  last_used_at: Date;
}

const identityOf = (r: IdentityRow): UpstreamIdentity => ({
  provider: r.provider,
  subject: r.subject,
  userId: Number(r.user_id),
  email: r.email,
  linkedAt: r.linked_at,
  lastUsedAt: r.last_used_at,
});

/** The person `subject` at `provider` is linked to, if any. */
export async function findUpstreamIdentity(db: Queryable, provider: string, subject: string): Promise<UpstreamIdentity | undefined> {
  const { rows } = await db.query<IdentityRow>('SELECT * FROM upstream_identities WHERE provider = $1 AND subject = $2', [
    provider,
    subject,
  ]);
  return rows[0] && identityOf(rows[0]);
}

/** The identities linked to a person, by provider. */
export async function identitiesOf(db: Queryable, userId: number): Promise<UpstreamIdentity[]> {
  const { rows } = await db.query<IdentityRow>('SELECT * FROM upstream_identities WHERE user_id = $1 ORDER BY provider', [userId]);
  return rows.map(identityOf);
}

/**
 * Links `subject` at `provider` to the person. Refused (false, nothing written) when the identity
 * is another person's already, or the person has another identity at the provider: the primary
 * key and the unique pair decide between two links that race.
 */
export async function linkUpstreamIdentity(
  tx: Transaction,
  link: { provider: string; subject: string; userId: number; email: string | undefined },
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO upstream_identities (provider, subject, user_id, email) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING`,
    [link.provider, link.subject, link.userId, link.email ?? null],
  );
  if (rowCount !== 1) return false;
  // Linked again: an unlink before no longer holds.
  await tx.query('DELETE FROM upstream_unlinks WHERE provider = $1 AND user_id = $2', [link.provider, link.userId]);
  return true;
}

/** Whether the person unlinked the provider (and has not linked it again since). */
export async function unlinkedBefore(db: Queryable, provider: string, userId: number): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM upstream_unlinks WHERE provider = $1 AND user_id = $2', [provider, userId]);
  return rowCount === 1;
}

/** Records a sign-in through the identity (and the email it came with). */
export async function touchUpstreamIdentity(tx: Transaction, provider: string, subject: string, email: string | undefined): Promise<void> {
  await tx.query('UPDATE upstream_identities SET last_used_at = now(), email = $3 WHERE provider = $1 AND subject = $2', [
    provider,
    subject,
    email ?? null,
  ]);
}

/** Unlinks the person's identity at `provider`; what was unlinked, if there was one. */
export async function unlinkUpstreamIdentity(tx: Transaction, userId: number, provider: string): Promise<UpstreamIdentity | undefined> {
  const { rows } = await tx.query<IdentityRow>('DELETE FROM upstream_identities WHERE user_id = $1 AND provider = $2 RETURNING *', [
    userId,
    provider,
  ]);
  if (!rows[0]) return undefined;
  await tx.query('INSERT INTO upstream_unlinks (provider, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [provider, userId]);
  return identityOf(rows[0]);
}

/**
 * Removes every identity linked to the person, without recording an unlink (an account adopted:
 * what its maker linked is not the new holder's, who may link the provider again by its email).
 */
export async function deleteIdentitiesOf(tx: Transaction, userId: number): Promise<void> {
  await tx.query('DELETE FROM upstream_identities WHERE user_id = $1', [userId]);
}

/** A sign-in (or a link) sent to a provider, until it comes back. */
export interface UpstreamSignIn {
  provider: string;
  /** SHA-256 of the cookie of the browser that began it. */
  browserHash: Buffer;
  nonce: string;
  returnTo: string;
  acr: string | null;
  /** A link begun on the account page: the person it is for. */
  linkUser: number | null;
}

/** How long a sign-in at a provider may take: a password and a second factor there, not a coffee break. */
export const UPSTREAM_SIGN_IN_MINUTES = 10;

export async function insertUpstreamSignIn(db: Queryable, stateHash: Buffer, s: UpstreamSignIn): Promise<void> {
  await db.query(
    `INSERT INTO upstream_sign_ins (state_hash, provider, browser_hash, nonce, return_to, acr, link_user, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(mins => $8))`,
    [stateHash, s.provider, s.browserHash, s.nonce, s.returnTo, s.acr, s.linkUser, UPSTREAM_SIGN_IN_MINUTES],
  );
}

/** Uses the sign-in of `stateHash` up (deleted, valid or not): what it was, when it was still valid. */
export async function takeUpstreamSignIn(db: Queryable, stateHash: Buffer): Promise<UpstreamSignIn | undefined> {
  const { rows } = await db.query<{
    provider: string;
    browser_hash: Buffer;
    nonce: string;
    return_to: string;
    acr: string | null;
    link_user: string | null;
    valid: boolean;
  }>('DELETE FROM upstream_sign_ins WHERE state_hash = $1 RETURNING *, expires_at > now() AS valid', [stateHash]);
  const r = rows[0];
  if (!r?.valid) return undefined;
  return {
    provider: r.provider,
    browserHash: r.browser_hash,
    nonce: r.nonce,
    returnTo: r.return_to,
    acr: r.acr,
    linkUser: r.link_user === null ? null : Number(r.link_user),
  };
}

/**
 * Serializes, for the rest of `tx`, the sign-ins of one identity at one provider: two first
 * sign-ins racing would both find it unlinked, and both make a person.
 */
export async function lockUpstreamIdentity(tx: Transaction, provider: string, subject: string): Promise<void> {
  await lockForTransaction(tx, 'upstream', JSON.stringify([provider, subject]));
}

/** Every provider, as the sign-in pages list them (secrets left sealed). */
export async function allIdentityProviders(db: Queryable): Promise<{ provider: IdentityProvider; secretSealed: Buffer | null }[]> {
  const { rows } = await db.query<{ id: string; resource: Omit<IdentityProvider, 'id'>; secret_sealed: Buffer | null }>(
    'SELECT id, resource, secret_sealed FROM identity_providers ORDER BY id',
  );
  return rows.map((r) => ({ provider: { ...r.resource, id: r.id }, secretSealed: r.secret_sealed }));
}

/** Sign-ins at a provider that never came back, once expired (the purge job). */
export async function purgeUpstreamSignIns(db: Queryable): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM upstream_sign_ins WHERE expires_at <= now()');
  return rowCount ?? 0;
}
