// The names the operator gave box schemas and roles before they were unique by
// construction (lower case, [a-z0-9_], parts joined with "_", cut to 54
// characters + "_" + 8 hex of a hash past 63), kept to show that namespaces
// which shared them then no longer do.
import { createHash } from 'node:crypto';

export function oldIdentifier(...parts: string[]): string {
  const raw = parts
    .join('_')
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_');
  if (raw.length <= 63) return raw;
  return `${raw.slice(0, 54)}_${createHash('sha256').update(raw).digest('hex').slice(0, 8)}`;
}

export function oldBoxDbNames(namespace: string, database: string): { schema: string; role: string } {
  return { schema: oldIdentifier('box', namespace), role: oldIdentifier(database, 'box', namespace) };
}

/**
 * A short namespace whose old schema or role name is that of `namespace` (one
 * long enough to be cut): what an attacker would pick to share it.
 */
export function oldTwin(namespace: string, database: string, kind: 'schema' | 'role'): string {
  const prefix = kind === 'schema' ? 'box_' : `${database}_box_`;
  return oldBoxDbNames(namespace, database)[kind].slice(prefix.length).replaceAll('_', '-');
}
