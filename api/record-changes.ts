// What a write changed in a record, for its audit event (api/audit.ts `record_changed`): each
// top-level field whose value differs, before → after. A record's secret is never in the record
// (a Client's is a hash beside it, an IdentityProvider's sealed beside it; a person's password is
// not a field of theirs): a write that sets one says only that it changed.
import type { FieldChange } from './audit.js';

/** Fields of the box's bookkeeping, not of the record: they change with every write. */
const BOOKKEEPING = new Set(['meta', 'resourceType', 'updated_at', 'created_at']);

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** The fields that differ between `before` and `after` (either may be absent: a creation, a deletion). */
export function recordChanges(
  before: Record<string, unknown> | undefined,
  after: Record<string, unknown> | undefined,
  secretsWritten: readonly string[] = [],
): Record<string, FieldChange> {
  const changes: Record<string, FieldChange> = {};
  const fields = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  for (const field of [...fields].sort()) {
    if (BOOKKEEPING.has(field)) continue;
    const from = before?.[field];
    const to = after?.[field];
    if (same(from, to)) continue;
    changes[field] = { ...(from !== undefined ? { from } : {}), ...(to !== undefined ? { to } : {}) };
  }
  for (const secret of secretsWritten) changes[secret] = { to: '(changed)' };
  return changes;
}
