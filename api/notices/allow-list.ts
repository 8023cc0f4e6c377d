// The ranges a receiver of notices may be at although special-use or the box's own (./post.ts):
// BOXAUTH_NOTICE_ALLOWED_ADDRESSES from the start, and what an administrator writes at runtime
// (PUT /settings/notices), kept in the database for every process of the box. A development box,
// a receiver inside the cluster, the OpenID Foundation's suite at https://127.0.0.1:31443.
import type { Actor, Audit } from '../audit.js';
import type { NoticeConfig } from '../config.js';
import { withTransaction, type Pool, type Queryable } from '../db/pool.js';
import { ValidationError, noFieldErrors } from '../errors.js';
import { parseCidr } from '../outbound.js';
import { readNoticeAllowedAddresses, writeNoticeAllowedAddresses } from '../store/notices.js';

/** GET and PUT /settings/notices (docs/reference/rest-api.md#settings). */
export interface NoticeSettings {
  /** Written at runtime: every process of the box holds to them at its next send. */
  allowed_addresses: string[];
  /** BOXAUTH_NOTICE_ALLOWED_ADDRESSES, allowed as well (changed only by a restart). */
  allowed_addresses_from_environment: string[];
}

export async function noticeSettings(db: Queryable, config: { notices: NoticeConfig }): Promise<NoticeSettings> {
  return {
    allowed_addresses: await readNoticeAllowedAddresses(db),
    allowed_addresses_from_environment: config.notices.allowedAddresses.map(([a, p]) => `${a}/${p}`),
  };
}

/** The problems of a body of PUT /settings/notices, by field (none: it may be written). */
export function noticeSettingsProblems(body: unknown): Record<string, string[]> {
  const errors = noFieldErrors();
  const entries = typeof body === 'object' && body !== null ? (body as Record<string, unknown>).allowed_addresses : undefined;
  if (!Array.isArray(entries)) errors.allowed_addresses = ['must be an array of IP addresses or CIDRs (e.g. ["127.0.0.1/32"])'];
  else {
    const wrong = entries.filter((e) => typeof e !== 'string' || !parseCidr(e));
    if (wrong.length)
      errors.allowed_addresses = [
        `${wrong.map((w) => JSON.stringify(w)).join(', ')} is not an IP address or CIDR (e.g. 10.0.0.0/8, fd00::/8)`,
      ];
    else if (entries.length > 100) errors.allowed_addresses = ['must hold at most 100 entries'];
    else {
      // A range of every address switches the guard off for every receiver, an SSF receiver's push URL included.
      const everything = entries.filter((e) => parseCidr(e as string)![1] === 0);
      if (everything.length)
        errors.allowed_addresses = [
          `${everything.map((w) => JSON.stringify(w)).join(', ')} allows every address: name the ranges receivers are at (e.g. 10.96.0.0/12)`,
        ];
    }
  }
  return errors;
}

/**
 * Replaces the ranges allowed at runtime with `body.allowed_addresses` (a 422 when one is not a
 * range, or is every address), with an audit event `settings_changed` of `by` in the same transaction.
 */
export async function writeNoticeSettings(
  svc: { pool: Pool; config: { notices: NoticeConfig }; audit: Pick<Audit, 'recordIn'> },
  body: unknown,
  by: Actor,
): Promise<NoticeSettings> {
  const errors = noticeSettingsProblems(body);
  if (Object.keys(errors).length) throw new ValidationError(body, errors);
  // Kept as CIDRs, as read back: "127.0.0.1" becomes "127.0.0.1/32".
  const written = (body as { allowed_addresses: string[] }).allowed_addresses.map((e) => parseCidr(e)!).map(([a, p]) => `${a}/${p}`);
  await withTransaction(svc.pool, async (tx) => {
    const before = await readNoticeAllowedAddresses(tx);
    await writeNoticeAllowedAddresses(tx, written);
    if (JSON.stringify(before) !== JSON.stringify(written))
      await svc.audit.recordIn(tx, {
        event: 'settings_changed',
        setting: 'notices',
        changes: { allowed_addresses: { from: before, to: written } },
        by,
      });
  });
  return noticeSettings(svc.pool, svc.config);
}
