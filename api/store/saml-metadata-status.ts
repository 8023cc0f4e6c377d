// What the box last made of each SAML app's metadata at its URL (Client.saml.metadata.url):
// read, with what the app says of itself, or refused, and why; when, from which URL, and when
// to look again (api/saml/metadata-status.ts decides; this keeps it). The work of looking again
// is claimed in one statement, so that of a box's processes and replicas one fetches.
import type { Queryable } from '../db/pool.js';

/** What the box read in an app's metadata, as the admin console and the operator show it. */
export interface SamlMetadataSummary {
  entityId: string;
  /** The AssertionConsumerServices the box answers (HTTP-POST), in the document's order. */
  consumers: { url: string; binding: string; index?: number; isDefault: boolean }[];
  /** The SingleLogoutServices the box uses (HTTP-Redirect, SOAP). */
  logout: { url: string; binding: string }[];
  /** When the first of its certificates expires (ISO 8601); null: it names none. */
  certificatesExpire: string | null;
}

/** The outcome of a look at an app's metadata: read, or refused with the reason of its condition. */
export type SamlMetadataOutcome =
  | { outcome: 'read'; summary: SamlMetadataSummary }
  | { outcome: 'refused'; reason: 'SamlMetadataUnreachable' | 'SamlMetadataInvalid'; message: string };

/** The record of an app: undefined fields until the box first looked. */
export type SamlMetadataStatus = SamlMetadataOutcome & { url: string; fetchedAt: string; refreshAfter: string };

interface Row {
  url: string | null;
  outcome: 'read' | 'refused' | null;
  reason: 'SamlMetadataUnreachable' | 'SamlMetadataInvalid' | null;
  message: string | null;
  summary: SamlMetadataSummary | null;
  fetched_at: Date | null;
  refresh_after: Date | null;
}

const URL_OF = (client: string): string => `${client}.resource->'saml'->'metadata'->>'url'`;

/**
 * Claims, for `leaseSeconds`, the apps whose metadata URL the box has not looked at yet, looked
 * at under another URL, or must look at again, and that no process has claimed; returns their
 * client ids. One statement: a row another process claims (or records) meanwhile is re-checked
 * under its lock (ON CONFLICT's WHERE) and left to it, so each app is fetched once.
 */
export async function claimSamlMetadataChecks(db: Queryable, leaseSeconds: number): Promise<string[]> {
  const stale = (s: string, client: string): string =>
    `(${s}.url IS DISTINCT FROM ${URL_OF(client)} OR ${s}.refresh_after IS NULL OR ${s}.refresh_after <= now())
     AND (${s}.claimed_until IS NULL OR ${s}.claimed_until <= now())`;
  const { rows } = await db.query<{ client_id: string }>(
    `INSERT INTO saml_metadata_status AS s (client_id, claimed_until)
       SELECT c.id, now() + make_interval(secs => $1)
       FROM clients c LEFT JOIN saml_metadata_status o ON o.client_id = c.id
       WHERE c.resource->'saml'->'metadata' ? 'url' AND (o.client_id IS NULL OR ${stale('o', 'c')})
     ON CONFLICT (client_id) DO UPDATE SET claimed_until = EXCLUDED.claimed_until
       WHERE EXISTS (SELECT 1 FROM clients k WHERE k.id = s.client_id AND ${stale('s', 'k')})
     RETURNING s.client_id`,
    [leaseSeconds],
  );
  return rows.map((r) => r.client_id);
}

/**
 * Records what the box made of the metadata of `clientId` at `url`, to be looked at again in
 * `seconds`, and ends any claim on it; nothing when the client is gone.
 */
export async function recordSamlMetadataOutcome(
  db: Queryable,
  clientId: string,
  url: string,
  outcome: SamlMetadataOutcome,
  seconds: number,
): Promise<void> {
  const refused = outcome.outcome === 'refused' ? outcome : undefined;
  await db.query(
    `INSERT INTO saml_metadata_status (client_id, url, outcome, reason, message, summary, fetched_at, refresh_after, claimed_until)
       SELECT id, $2, $3, $4, $5, $6, now(), now() + make_interval(secs => $7), NULL FROM clients WHERE id = $1
     ON CONFLICT (client_id) DO UPDATE SET url = EXCLUDED.url, outcome = EXCLUDED.outcome, reason = EXCLUDED.reason,
       message = EXCLUDED.message, summary = EXCLUDED.summary, fetched_at = EXCLUDED.fetched_at,
       refresh_after = EXCLUDED.refresh_after, claimed_until = NULL`,
    [
      clientId,
      url,
      outcome.outcome,
      refused?.reason ?? null,
      refused?.message ?? null,
      outcome.outcome === 'read' ? JSON.stringify(outcome.summary) : null,
      seconds,
    ],
  );
}

/** Gives up a claim without an outcome (the box was too busy to read the document): any process may try again at once. */
export async function releaseSamlMetadataClaim(db: Queryable, clientId: string): Promise<void> {
  await db.query('UPDATE saml_metadata_status SET claimed_until = NULL WHERE client_id = $1', [clientId]);
}

/** What the box last made of the metadata of `clientId`; undefined until it first looked. */
export async function samlMetadataStatus(db: Queryable, clientId: string): Promise<SamlMetadataStatus | undefined> {
  const { rows } = await db.query<Row>(
    'SELECT url, outcome, reason, message, summary, fetched_at, refresh_after FROM saml_metadata_status WHERE client_id = $1',
    [clientId],
  );
  const row = rows[0];
  if (!row?.outcome || row.url === null || !row.fetched_at || !row.refresh_after) return undefined;
  const at = { url: row.url, fetchedAt: row.fetched_at.toISOString(), refreshAfter: row.refresh_after.toISOString() };
  if (row.outcome === 'read') return { ...at, outcome: 'read', summary: row.summary! };
  return { ...at, outcome: 'refused', reason: row.reason!, message: row.message ?? '' };
}
