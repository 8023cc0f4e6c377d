// A person's second factors and what their sign-ins hold half made (migrations 019, 034):
// passkeys, an app's codes (TOTP, and every kind of api/factor-kinds.ts `app`) and sign-in codes by email, and what a sign-in needs to know of them.
// What is decided about them is api/people/'s; this file only reads and writes.
import type { Queryable, Transaction } from '../db/pool.js';
import {
  APP_FACTOR_KINDS,
  FACTOR_KIND_NAMES,
  MAILED_FACTOR_KINDS,
  type AppFactorKind,
  type FactorKind,
  type HeldFactors,
  type MailedFactorKind,
} from '../factor-kinds.js';
import { uniqueViolation } from './constraints.js';

/** A factor as a person and an administrator see it: never its key or secret. */
export interface FactorSummary {
  id: number;
  kind: FactorKind;
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  /** A passkey synced between devices (multiDevice) or bound to one (singleDevice). */
  deviceType: 'singleDevice' | 'multiDevice' | null;
}

/** A passkey as a sign-in checks it. */
export interface Passkey extends FactorSummary {
  kind: 'passkey';
  userId: number;
  credentialId: Buffer;
  publicKey: Buffer;
  signCount: number;
  transports: string[];
  backedUp: boolean;
}

/**
 * An app's codes (a TOTP, an HOTP: api/factor-kinds.ts `app`) as a sign-in checks them: its sealed
 * secret and the last step (time step or counter) a code was accepted for, in the columns named
 * for TOTP, the first of them (migration 019).
 */
export interface AppFactor extends FactorSummary {
  kind: AppFactorKind;
  userId: number;
  sealedSecret: Buffer;
  lastStep: number | null;
  confirmed: boolean;
}

/** Sign-in codes by email (every kind of api/factor-kinds.ts `mailed`) as a sign-in checks them: the code mailed last (its HMAC), until when, and for which sign-in. */
export interface EmailFactor extends FactorSummary {
  kind: MailedFactorKind;
  userId: number;
  codeHash: Buffer | null;
  codeExpiresAt: Date | null;
  /** The SHA-256 of the sign-in step's (or signed-in browser's) id the code was asked for. */
  codeFor: Buffer | null;
}

interface DbRow {
  id: string;
  user_id: string;
  kind: FactorKind;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
  confirmed: boolean;
  credential_id: Buffer | null;
  public_key: Buffer | null;
  sign_count: string | null;
  transports: string[] | null;
  device_type: 'singleDevice' | 'multiDevice' | null;
  backed_up: boolean | null;
  totp_secret: Buffer | null;
  totp_last_step: string | null;
  email_code_hash: Buffer | null;
  email_code_expires_at: Date | null;
  email_code_for: Buffer | null;
}

const summary = (r: DbRow): FactorSummary => ({
  id: Number(r.id),
  kind: r.kind,
  name: r.name,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  deviceType: r.device_type,
});

const passkey = (r: DbRow): Passkey => ({
  ...summary(r),
  kind: 'passkey',
  userId: Number(r.user_id),
  credentialId: r.credential_id!,
  publicKey: r.public_key!,
  signCount: Number(r.sign_count),
  transports: r.transports ?? [],
  backedUp: r.backed_up ?? false,
});

const appFactor = (r: DbRow): AppFactor => ({
  ...summary(r),
  kind: r.kind as AppFactorKind,
  userId: Number(r.user_id),
  sealedSecret: r.totp_secret!,
  lastStep: r.totp_last_step === null ? null : Number(r.totp_last_step),
  confirmed: r.confirmed,
});

const emailFactor = (r: DbRow): EmailFactor => ({
  ...summary(r),
  kind: r.kind as MailedFactorKind,
  userId: Number(r.user_id),
  codeHash: r.email_code_hash,
  codeExpiresAt: r.email_code_expires_at,
  codeFor: r.email_code_for,
});

/** A person's confirmed factors, oldest first. */
export async function listFactors(db: Queryable, userId: number): Promise<FactorSummary[]> {
  const { rows } = await db.query<DbRow>('SELECT * FROM factors WHERE user_id = $1 AND confirmed ORDER BY id', [userId]);
  return rows.map(summary);
}

/** A person's confirmed passkeys. */
export async function listPasskeys(db: Queryable, userId: number): Promise<Passkey[]> {
  const { rows } = await db.query<DbRow>("SELECT * FROM factors WHERE user_id = $1 AND kind = 'passkey' ORDER BY id", [userId]);
  return rows.map(passkey);
}

/** The passkey of a credential id, whoever's it is (a discoverable credential names its person only through it). */
export async function findPasskey(db: Queryable, credentialId: Buffer): Promise<Passkey | undefined> {
  const { rows } = await db.query<DbRow>("SELECT * FROM factors WHERE credential_id = $1 AND kind = 'passkey'", [credentialId]);
  return rows[0] && passkey(rows[0]);
}

export interface NewPasskey {
  name: string;
  credentialId: Buffer;
  publicKey: Buffer;
  signCount: number;
  transports: string[];
  deviceType: 'singleDevice' | 'multiDevice';
  backedUp: boolean;
}

/** Adds a passkey; a name the person uses already, or a credential registered already, is a ConstraintViolation. */
export async function addPasskey(db: Queryable, userId: number, key: NewPasskey): Promise<FactorSummary> {
  const { rows } = await db
    .query<DbRow>(
      `INSERT INTO factors (user_id, kind, name, credential_id, public_key, sign_count, transports, device_type, backed_up)
       VALUES ($1, 'passkey', $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
      [userId, key.name, key.credentialId, key.publicKey, key.signCount, key.transports, key.deviceType, key.backedUp],
    )
    .catch((err: unknown) => uniqueViolation(err, ['factors_user_name', 'factors_credential_id_key'], 'name'));
  return summary(rows[0]!);
}

/**
 * Records a passkey's use: its new signature counter, only if the counter still is what the
 * check read (two sign-ins with one assertion cannot both pass). False when it moved meanwhile.
 */
/** Whether factor `id` is still there (read under its person's row: a removal or reset then came first, or comes after). */
export async function factorExists(db: Queryable, id: number): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM factors WHERE id = $1', [id]);
  return rowCount === 1;
}

export async function recordPasskeyUse(db: Queryable, id: number, readCount: number, newCount: number): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE factors SET sign_count = $3, last_used_at = now() WHERE id = $1 AND sign_count = $2', [
    id,
    readCount,
    newCount,
  ]);
  return rowCount === 1;
}

/** The kinds set up as a pending factor that their first code confirms, and what each reads as. */
type Confirmable = { [K in AppFactorKind]: AppFactor } & { [K in MailedFactorKind]: EmailFactor };

const READ: { [K in keyof Confirmable]: (r: DbRow) => Confirmable[K] } = {
  ...(Object.fromEntries(APP_FACTOR_KINDS.map((kind) => [kind, appFactor])) as { [K in AppFactorKind]: (r: DbRow) => AppFactor }),
  ...(Object.fromEntries(MAILED_FACTOR_KINDS.map((kind) => [kind, emailFactor])) as { [K in MailedFactorKind]: (r: DbRow) => EmailFactor }),
};

/** A person's factor of `kind`: the confirmed one, or (`pending`) the one being set up. */
export async function findFactor<K extends keyof Confirmable>(
  db: Queryable,
  userId: number,
  kind: K,
  which: 'confirmed' | 'pending' = 'confirmed',
): Promise<Confirmable[K] | undefined> {
  const { rows } = await db.query<DbRow>(
    'SELECT * FROM factors WHERE user_id = $1 AND kind = $2 AND confirmed = $3 ORDER BY id DESC LIMIT 1',
    [userId, kind, which === 'confirmed'],
  );
  return rows[0] && READ[kind](rows[0]);
}

/** What a factor being set up starts with: an app its sealed secret; codes by email nothing (each code comes with its mail). */
export type FactorStart = { kind: AppFactorKind; sealedSecret: Buffer } | { kind: MailedFactorKind };

/** Starts setting up a factor: an unconfirmed one of its kind (an earlier unconfirmed one, and its code, replaced). */
export async function startFactor(db: Transaction, userId: number, name: string, start: FactorStart): Promise<number> {
  await db.query('DELETE FROM factors WHERE user_id = $1 AND kind = $2 AND NOT confirmed', [userId, start.kind]);
  const { rows } = await db.query<{ id: string }>(
    'INSERT INTO factors (user_id, kind, name, totp_secret, confirmed) VALUES ($1, $2, $3, $4, false) RETURNING id',
    [userId, start.kind, name, 'sealedSecret' in start ? start.sealedSecret : null],
  );
  return Number(rows[0]!.id);
}

/** The unique indexes a confirmation may meet: one name per person (every app kind's name is fixed), and TOTP's own (migration 019). */
const ONE_APP = ['factors_one_totp', 'factors_user_name'];

/**
 * Accepts an app's code for step `step` (a time step, a counter): only if no code of this or a
 * later step was accepted before (RFC 6238 §5.2: "the verifier MUST NOT accept the second attempt
 * of the same OTP after the successful validation has been issued for the first OTP"; RFC 4226
 * §7.2: the counter moves on past the code accepted). One row, one UPDATE: of two processes
 * accepting the same code at once, one wins. `confirm` also confirms an enrolment, only while the
 * person has no confirmed app of its kind (a confirmation holds the person's row: ../people/ways/enrolment.ts,
 * so a kind needs no unique index of its own, and its migration only widens the kinds).
 */
export async function acceptCodeStep(db: Queryable, id: number, step: number, confirm = false): Promise<boolean> {
  const onlyOne = confirm
    ? ' AND NOT EXISTS (SELECT 1 FROM factors held WHERE held.user_id = factors.user_id AND held.kind = factors.kind AND held.confirmed)'
    : '';
  const { rowCount } = await db
    .query(
      `UPDATE factors SET totp_last_step = $2, last_used_at = now()${confirm ? ', confirmed = true' : ''}
       WHERE id = $1 AND kind = ANY($3) AND (totp_last_step IS NULL OR totp_last_step < $2)${onlyOne}`,
      [id, step, APP_FACTOR_KINDS],
    )
    .catch((err: unknown) => uniqueViolation(err, ONE_APP, 'name'));
  return rowCount === 1;
}

// --- sign-in codes by email

/**
 * The code just mailed for factor `id` of `userId` to `address` (its HMAC), replacing the one
 * before: false when the factor is gone (removed, reset, or replaced by a newer one being set up),
 * or `address` is not the person's any more (a change that commits after this forgets the code:
 * forgetEmailCodes).
 */
export async function putEmailCode(
  db: Queryable,
  id: number,
  userId: number,
  address: string,
  hash: Buffer,
  expiresAt: Date,
  codeFor: Buffer,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE factors SET email_code_hash = $4, email_code_expires_at = $5, email_code_for = $6
     WHERE id = $1 AND user_id = $2 AND kind = ANY($7) AND EXISTS (SELECT 1 FROM users WHERE id = $2 AND email = $3)`,
    [id, userId, address, hash, expiresAt, codeFor, MAILED_FACTOR_KINDS],
  );
  return rowCount === 1;
}

/** Forgets every sign-in code mailed to a person: of their codes by email, set up or being set up, and instead of a password (their address changed). */
export async function forgetEmailCodes(db: Queryable, userId: number): Promise<void> {
  await db.query(
    'UPDATE factors SET email_code_hash = NULL, email_code_expires_at = NULL, email_code_for = NULL WHERE user_id = $1 AND kind = ANY($2)',
    [userId, MAILED_FACTOR_KINDS],
  );
  await db.query('DELETE FROM first_step_codes WHERE user_id = $1', [userId]);
}

/**
 * Takes the code of factor `id`: only while it is the one mailed last, for the sign-in `codeFor`,
 * and not expired at `now` (the box's clock, as its mail's). One UPDATE: of two requests with one
 * code, one wins, and the code is gone after. `confirm` also confirms a factor being set up
 * (failing if the person has codes by email confirmed already: one name, factors_user_name).
 */
export async function takeEmailCode(
  db: Queryable,
  id: number,
  hash: Buffer,
  codeFor: Buffer,
  now: Date,
  confirm = false,
): Promise<boolean> {
  const { rowCount } = await db
    .query(
      `UPDATE factors SET email_code_hash = NULL, email_code_expires_at = NULL, email_code_for = NULL, last_used_at = now()${confirm ? ', confirmed = true' : ''}
       WHERE id = $1 AND kind = ANY($5) AND email_code_hash = $2 AND email_code_for = $3 AND email_code_expires_at > $4`,
      [id, hash, codeFor, now, MAILED_FACTOR_KINDS],
    )
    .catch((err: unknown) => uniqueViolation(err, ['factors_user_name'], 'name'));
  return rowCount === 1;
}

/** Removes one of a person's factors; the removed factor, when it was theirs. */
export async function removeFactor(db: Queryable, userId: number, id: number): Promise<FactorSummary | undefined> {
  const { rows } = await db.query<DbRow>('DELETE FROM factors WHERE user_id = $1 AND id = $2 RETURNING *', [userId, id]);
  return rows[0] && summary(rows[0]);
}

/** Removes every factor and recovery code of a person (an administrator's reset, a recovery). */
export async function removeAllFactors(db: Queryable, userId: number): Promise<number> {
  const { rowCount } = await db.query('DELETE FROM factors WHERE user_id = $1 AND confirmed', [userId]);
  await db.query('DELETE FROM factors WHERE user_id = $1', [userId]);
  await db.query('DELETE FROM recovery_codes WHERE user_id = $1', [userId]);
  return rowCount ?? 0;
}

/**
 * Whether the person must enrol a second factor at their next sign-in (an administrator's reset).
 * False when there is no such person. In a transaction the update holds the person's row until
 * it commits: a second reset of the same person waits for the first.
 */
export async function setMustEnrol(db: Queryable, userId: number, must: boolean): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE users SET must_enrol = $2 WHERE id = $1', [userId, must]);
  return rowCount === 1;
}

// --- what people's sign-in needs to decide

/** What a sign-in needs to know of a person's factors (../factor-kinds.ts) and the rules over them. */
export interface FactorState extends HeldFactors {
  recoveryCodes: number;
  /** A group of theirs requires a second factor. */
  groupRequires: boolean;
  /** An administrator reset their factors: they enrol one at their next sign-in. */
  mustEnrol: boolean;
}

export async function factorState(db: Queryable, userId: number): Promise<FactorState> {
  const { rows } = await db.query<{ held: Record<string, number>; codes: string; group_requires: boolean; must_enrol: boolean }>(
    `SELECT (SELECT coalesce(jsonb_object_agg(kind, n), '{}') FROM
              (SELECT kind, count(*) AS n FROM factors WHERE user_id = u.id AND confirmed GROUP BY kind) AS k) AS held,
            (SELECT count(*) FROM recovery_codes WHERE user_id = u.id AND used_at IS NULL) AS codes,
            EXISTS (SELECT 1 FROM user_groups ug JOIN groups g ON g.id = ug.group_id
                    WHERE ug.user_id = u.id AND g.require_second_factor) AS group_requires,
            u.must_enrol
     FROM users u WHERE u.id = $1`,
    [userId],
  );
  const r = rows[0];
  // Counted by kind: a kind this release does not know (a later one's, rolled back) counts as none.
  const held = Object.fromEntries(FACTOR_KIND_NAMES.map((kind) => [kind, Number(r?.held[kind] ?? 0)])) as Record<FactorKind, number>;
  if (!r) return { ...held, recoveryCodes: 0, groupRequires: false, mustEnrol: false };
  return { ...held, recoveryCodes: Number(r.codes), groupRequires: r.group_requires, mustEnrol: r.must_enrol };
}
