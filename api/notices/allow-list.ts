// The ranges a receiver of notices may be at although special-use or the box's own (./post.ts):
// BOXAUTH_NOTICE_ALLOWED_ADDRESSES from the start, and what an administrator writes at runtime
// (PUT /settings/notices), kept in the database for every process of the box. A development box,
// a receiver inside the cluster, the OpenID Foundation's suite at https://127.0.0.1:31443.
import type { NoticeConfig } from '../config.js';
import type { Queryable } from '../db/pool.js';
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
  }
  return errors;
}

/** Replaces the ranges allowed at runtime with `body.allowed_addresses`; a 422 when one is not a range. */
export async function writeNoticeSettings(db: Queryable, config: { notices: NoticeConfig }, body: unknown): Promise<NoticeSettings> {
  const errors = noticeSettingsProblems(body);
  if (Object.keys(errors).length) throw new ValidationError(body, errors);
  const entries = (body as { allowed_addresses: string[] }).allowed_addresses;
  // Kept as CIDRs, as read back: "127.0.0.1" becomes "127.0.0.1/32".
  await writeNoticeAllowedAddresses(
    db,
    entries.map((e) => parseCidr(e)!).map(([a, p]) => `${a}/${p}`),
  );
  return noticeSettings(db, config);
}
