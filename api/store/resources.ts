// Tables that hold a resource as jsonb (clients, access_policies): read, upsert,
// delete and search, with the rule that a record owned by a Kubernetes resource
// (managed_by) is changed only by its owner.
import { ApiError } from '../errors.js';
import { withTransaction, type Pool, type Queryable, type Transaction } from '../db/pool.js';
import type { Meta } from '../types.js';
import { jsonbColumn, jsonbWhere, orderAndPage, type SearchQuery } from './search.js';
import { lockForTransaction } from './box-locks.js';

export type ResourceTableName = 'clients' | 'access_policies' | 'apps' | 'identity_providers' | 'webhooks' | 'hooks';

export interface Row {
  id: string;
  resource: Record<string, unknown>;
  secret_hash?: string | null;
  secret_sealed?: Buffer | null;
  managed_by: string | null;
  version: number;
  created_at: Date;
  updated_at: Date;
  stamp?: string;
}

export interface Stored<T> {
  resource: T;
  managedBy: string | null;
  secretHash: string | null;
  /** An identity provider's client secret or bind password, a Webhook's signing secret, sealed (api/credentials/sealing.ts). */
  secretSealed?: Buffer | null;
  /**
   * The row's stamp (PostgreSQL's xmin): another after any write to it, through the REST API, the
   * operator or SQL by hand (which leaves `version` as it was). The operator's resync compares them
   * (stamps()) to find records changed behind its back without reading each.
   */
  stamp?: string;
}

export interface WriteOptions {
  /** The Kubernetes resource doing the write, or null for the REST API. */
  managedBy: string | null;
  /** A new secret hash (clients only); undefined keeps the current one. */
  secretHash?: string | null;
  /** A new sealed secret (identity providers, Webhooks); undefined keeps the current one. */
  secretSealed?: Buffer | null;
}

/** The column a table keeps a resource's secret in, if any. */
const SECRET_COLUMNS: Partial<Record<ResourceTableName, 'secret_hash' | 'secret_sealed'>> = {
  clients: 'secret_hash',
  identity_providers: 'secret_sealed',
  webhooks: 'secret_sealed',
  hooks: 'secret_sealed',
};

export function toStored<T>(row: Row): Stored<T> {
  const meta: Meta = {
    versionId: String(row.version),
    createdAt: row.created_at.toISOString(),
    lastUpdated: row.updated_at.toISOString(),
    ...(row.managed_by ? { managedBy: row.managed_by } : {}),
  };
  return {
    resource: { ...row.resource, id: row.id, meta } as T,
    managedBy: row.managed_by,
    secretHash: row.secret_hash ?? null,
    secretSealed: row.secret_sealed ?? null,
    ...(row.stamp !== undefined ? { stamp: row.stamp } : {}),
  };
}

export function managedConflict(kind: string, id: string, owner: string): ApiError {
  return new ApiError(
    409,
    'conflict',
    `${kind} "${id}" is managed by the Kubernetes resource ${owner}; change it there (kubectl edit), not through the REST API`,
  );
}

/**
 * Runs `work` in a transaction that first takes the lock of the writes of Client, AccessPolicy
 * and App records through the box's API, so that they run one at a time: the check of what a
 * writer may grant (api/policy/writers.ts) reads other records, which no write racing it may
 * change between the check and the write.
 */
export function withRecordWrites<T>(pool: Pool, work: (tx: Transaction) => Promise<T>): Promise<T> {
  return withTransaction(pool, async (tx) => {
    await lockForTransaction(tx, 'records');
    return work(tx);
  });
}

export class ResourceTable<T extends { id: string; resourceType: string }> {
  constructor(
    private readonly table: ResourceTableName,
    private readonly kind: T['resourceType'],
  ) {}

  async read(db: Queryable, id: string): Promise<Stored<T> | undefined> {
    const secret = SECRET_COLUMNS[this.table];
    // A prepared statement names its columns: `SELECT *` would fail on every connection that
    // prepared it ("cached plan must not change result type") once the next release adds a column
    // while this one still serves (docs/operations/upgrades.md).
    const columns = `id, resource, managed_by, version, created_at, updated_at, xmin::text AS stamp${secret ? `, ${secret}` : ''}`;
    const { rows } = await db.query<Row>({
      name: `read-${this.table}`,
      text: `SELECT ${columns} FROM ${this.table} WHERE id = $1`,
      values: [id],
    });
    return rows[0] && toStored<T>(rows[0]);
  }

  /** Columns a table keeps next to the resource, derived from it (for the table's indexes). */
  protected columns(_resource: T): Record<string, unknown> {
    return {};
  }

  /** Creates or replaces the record. A no-op write (nothing changed) keeps the version. */
  async write(db: Queryable, resource: T, opts: WriteOptions): Promise<{ stored: Stored<T>; created: boolean }> {
    const { meta: _meta, id, ...body } = resource as T & { meta?: unknown };
    const column = SECRET_COLUMNS[this.table];
    const hasSecret = column !== undefined;
    const secret = column === 'secret_sealed' ? opts.secretSealed : opts.secretHash;
    const params: unknown[] = [id, body, opts.managedBy];
    if (hasSecret) params.push(secret ?? null, secret !== undefined);
    const extra = Object.entries(this.columns(resource)).map(([name, value]) => ({ name, param: `$${params.push(value)}` }));
    const { rows } = await db.query<Row & { created: boolean }>(
      `
      INSERT INTO ${this.table} AS t (id, resource, managed_by${hasSecret ? `, ${column}` : ''}${extra.map((c) => `, ${c.name}`).join('')})
      VALUES ($1, $2, $3${hasSecret ? ', $4' : ''}${extra.map((c) => `, ${c.param}`).join('')})
      ON CONFLICT (id) DO UPDATE SET
        resource = EXCLUDED.resource,
        ${hasSecret ? `${column} = CASE WHEN $5 THEN EXCLUDED.${column} ELSE t.${column} END,` : ''}
        ${extra.map((c) => `${c.name} = EXCLUDED.${c.name},`).join(' ')}
        version = t.version + 1, updated_at = now()
      WHERE t.managed_by IS NOT DISTINCT FROM $3
        AND (t.resource IS DISTINCT FROM EXCLUDED.resource${hasSecret ? ` OR ($5 AND t.${column} IS DISTINCT FROM EXCLUDED.${column})` : ''}${extra.map((c) => ` OR t.${c.name} IS DISTINCT FROM EXCLUDED.${c.name}`).join('')})
      RETURNING *, xmin::text AS stamp, (xmax = 0) AS created`,
      params,
    );
    if (rows[0]) return { stored: toStored<T>(rows[0]), created: rows[0].created };
    // Nothing written: either nothing changed, or another owner holds the record.
    const current = await this.read(db, id);
    if (!current) throw new Error(`${this.kind} ${id} vanished during write`);
    if (current.managedBy !== opts.managedBy) {
      throw managedConflict(this.kind, id, current.managedBy ?? 'none (it was created through the REST API)');
    }
    return { stored: current, created: false };
  }

  /** Hands a record to a new owner (the operator adopting a REST-created record, or releasing one). */
  async setOwner(db: Queryable, id: string, managedBy: string | null): Promise<void> {
    await db.query(`UPDATE ${this.table} SET managed_by = $2 WHERE id = $1 AND managed_by IS DISTINCT FROM $2`, [id, managedBy]);
  }

  async remove(db: Queryable, id: string, managedBy: string | null): Promise<Stored<T> | undefined> {
    const { rows } = await db.query<Row>(`DELETE FROM ${this.table} WHERE id = $1 AND managed_by IS NOT DISTINCT FROM $2 RETURNING *`, [
      id,
      managedBy,
    ]);
    if (rows[0]) return toStored<T>(rows[0]);
    const current = await this.read(db, id);
    if (current) throw managedConflict(this.kind, id, current.managedBy ?? 'none');
    return undefined;
  }

  async search(db: Queryable, q: SearchQuery): Promise<{ total: number; resources: T[] }> {
    const params: unknown[] = [];
    const where = jsonbWhere(q, params);
    const total = (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${this.table} ${where}`, params)).rows[0]!.n;
    const page = orderAndPage(q, params, jsonbColumn(params));
    const { rows } = await db.query<Row>(`SELECT * FROM ${this.table} ${where} ${page}`, params);
    return { total, resources: rows.map((r) => toStored<T>(r).resource) };
  }

  /** Every record's stamp (Stored.stamp), by id: one query for a whole box, however many records it holds. */
  async stamps(db: Queryable): Promise<Map<string, string>> {
    const { rows } = await db.query<{ id: string; stamp: string }>(`SELECT id, xmin::text AS stamp FROM ${this.table}`);
    return new Map(rows.map((r) => [r.id, r.stamp]));
  }

  async ids(db: Queryable): Promise<string[]> {
    return (await db.query<{ id: string }>(`SELECT id FROM ${this.table} ORDER BY id`)).rows.map((r) => r.id);
  }
}
