// Device codes of the device authorization grant (RFC 8628; see migration 008).
import type { Queryable } from '../db/pool.js';
import type { CodeOwner } from './authorization-codes.js';

export interface DeviceCode {
  userCode: string;
  clientId: string;
  scope: string | null;
  expiresAt: Date;
  intervalSeconds: number;
  polledAt: Date | null;
  decision: 'allowed' | 'denied' | null;
  userId: number | null;
  authTime: Date | null;
  sid: string | null;
  /** What the sign-in that allowed it proved (RFC 8176). */
  amr: string[] | null;
  usedAt: Date | null;
}

interface DbRow {
  user_code: string;
  client_id: string;
  scope: string | null;
  expires_at: Date;
  interval_s: number;
  polled_at: Date | null;
  decision: 'allowed' | 'denied' | null;
  user_id: number | null;
  auth_time: Date | null;
  sid: string | null;
  amr: string[] | null;
  used_at: Date | null;
}

const fromDb = (r: DbRow): DeviceCode => ({
  userCode: r.user_code,
  clientId: r.client_id,
  scope: r.scope,
  expiresAt: r.expires_at,
  intervalSeconds: r.interval_s,
  polledAt: r.polled_at,
  decision: r.decision,
  userId: r.user_id,
  authTime: r.auth_time,
  sid: r.sid,
  amr: r.amr,
  usedAt: r.used_at,
});

/** Stores a new device code; false when the user code is taken (the caller draws another). */
export async function createDeviceCode(
  db: Queryable,
  hash: Buffer,
  code: Pick<DeviceCode, 'userCode' | 'clientId' | 'scope' | 'expiresAt' | 'intervalSeconds'>,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO device_codes (code_hash, user_code, client_id, scope, expires_at, interval_s) VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (user_code) DO NOTHING`,
    [hash, code.userCode, code.clientId, code.scope, code.expiresAt, code.intervalSeconds],
  );
  return rowCount === 1;
}

/** The client a device code was issued to, whatever became of the code since. */
export async function deviceCodeClient(db: Queryable, hash: Buffer): Promise<string | undefined> {
  const { rows } = await db.query<{ client_id: string }>('SELECT client_id FROM device_codes WHERE code_hash = $1', [hash]);
  return rows[0]?.client_id;
}

/** The code a device polls with, locked for the rest of the transaction. */
export async function findDeviceCodeForUpdate(db: Queryable, hash: Buffer): Promise<DeviceCode | undefined> {
  return findDeviceCode(db, hash, true);
}

/**
 * The code as it is now, without a lock: what a poll is about to issue, read before its
 * transaction (the box's Hooks are asked about it, api/oauth/token-hooks.ts); the poll reads it
 * again under its lock.
 */
export async function peekDeviceCode(db: Queryable, hash: Buffer): Promise<DeviceCode | undefined> {
  return findDeviceCode(db, hash, false);
}

async function findDeviceCode(db: Queryable, hash: Buffer, lock: boolean): Promise<DeviceCode | undefined> {
  const { rows } = await db.query<DbRow>(`SELECT * FROM device_codes WHERE code_hash = $1${lock ? ' FOR UPDATE' : ''}`, [hash]);
  return rows[0] && fromDb(rows[0]);
}

/** A pending, unexpired code by the user code a person typed. */
export async function findPendingByUserCode(db: Queryable, userCode: string): Promise<DeviceCode | undefined> {
  const { rows } = await db.query<DbRow>('SELECT * FROM device_codes WHERE user_code = $1 AND decision IS NULL AND expires_at > now()', [
    userCode,
  ]);
  return rows[0] && fromDb(rows[0]);
}

/** Records a person's decision on a pending code; false when it is no longer pending. */
export async function decideDeviceCode(
  db: Queryable,
  userCode: string,
  decision: { allowed: boolean; userId: number; authTime: Date; sid: string; amr: readonly string[] },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE device_codes SET decision = $2, user_id = $3, auth_time = $4, sid = $5, amr = $6
     WHERE user_code = $1 AND decision IS NULL AND expires_at > now()`,
    [userCode, decision.allowed ? 'allowed' : 'denied', decision.userId, decision.authTime, decision.sid, decision.amr],
  );
  return rowCount === 1;
}

/** Deletes device codes a person allowed that no device has picked up yet (a sign-out, a password change). */
export async function deletePendingDeviceCodes(db: Queryable, owner: CodeOwner): Promise<void> {
  const [column, value] = 'sid' in owner ? ['sid', owner.sid] : ['user_id', owner.user];
  await db.query(`DELETE FROM device_codes WHERE ${column} = $1 AND used_at IS NULL`, [value]);
}

export async function recordPoll(db: Queryable, hash: Buffer, intervalSeconds: number): Promise<void> {
  await db.query('UPDATE device_codes SET polled_at = now(), interval_s = $2 WHERE code_hash = $1', [hash, intervalSeconds]);
}

export async function markDeviceCodeUsed(db: Queryable, hash: Buffer): Promise<void> {
  await db.query('UPDATE device_codes SET used_at = now() WHERE code_hash = $1', [hash]);
}

export async function purgeDeviceCodes(db: Queryable): Promise<void> {
  await db.query("DELETE FROM device_codes WHERE expires_at < now() - interval '1 hour'");
}
