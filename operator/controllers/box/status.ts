// The Box's status, decided from what was read, without I/O: the Available
// condition from its Deployment, status.database from its spec and what its
// database turned out to be, and the Ready=False reason of a failure.
import { errorMessage } from '../../../api/public.js';
import { NotOwned, type BoxAccess } from '../../boxdb.js';
import type { NewCondition } from '../../conditions.js';
import { Problem } from '../../controller.js';
import { BoxReason, ConditionType } from '../../reasons.js';
import type { BoxResource, DeploymentObject } from './types.js';

/** status.database but `reachable`: which database the box uses, and where its API pods reach it. */
export interface DatabaseDescription {
  source: 'Operator' | 'Secret' | 'Cluster';
  secret?: string;
  cluster?: string;
  pooler?: string;
  host?: string;
  directHost?: string;
  database?: string;
  role?: string;
  /** Database: the box has a database of its own; Schema: a schema of a database other boxes share. */
  isolation?: 'Database' | 'Schema';
}

export type DatabaseStatus = DatabaseDescription & { reachable: boolean };

/** What the spec alone says of the box's database: all status.database can say before what it names is read. */
export function declaredDatabase(box: BoxResource): DatabaseDescription {
  const { secretRef, cluster } = box.spec?.database ?? {};
  if (cluster) return { source: 'Cluster', cluster: cluster.name, ...(cluster.pooler ? { pooler: cluster.pooler } : {}) };
  if (secretRef) return { source: 'Secret', secret: secretRef.name };
  return { source: 'Operator' };
}

/** status.database before the operator has looked at the database: not (yet) reached. */
export function unreached(description: DatabaseDescription): DatabaseStatus {
  return { ...description, reachable: false };
}

/** SQLSTATE classes of a server that could not be reached as the box: connection, authorization, database, shutdown. */
const UNREACHED = /^(08|28|3D|57P0)/;

/**
 * status.database: the database as described, and whether the operator reached it, from how its look at the
 * box's schema failed (`failure`; none: it succeeded). A server that answered and refused (a schema that is
 * not the namespace's, a statement it did not allow) was reached; one that did not let it in was not.
 */
export function databaseStatus(description: DatabaseDescription, failure?: unknown): DatabaseStatus {
  const code = (failure as { code?: unknown } | undefined)?.code;
  const answered = failure instanceof NotOwned || (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !UNREACHED.test(code));
  return { ...description, reachable: failure === undefined || answered };
}

/** The Available condition, from the Deployment's status. */
export function availability(box: BoxResource, deployment: DeploymentObject): NewCondition {
  const want = box.spec?.replicas ?? 1;
  const available = deployment.status?.availableReplicas ?? 0;
  const selector = `app.kubernetes.io/instance=${box.metadata.name}`;
  const condition = { type: ConditionType.Available };
  if (want === 0) return { ...condition, status: 'False', reason: BoxReason.ScaledToZero, message: 'spec.replicas is 0' };
  if (available > 0) {
    return {
      ...condition,
      status: 'True',
      reason: BoxReason.MinimumReplicasAvailable,
      message: `${available} of ${want} API pods available`,
    };
  }
  return {
    ...condition,
    status: 'False',
    reason: BoxReason.NoPodsAvailable,
    message: `0 of ${want} API pods available; see kubectl get pods -n ${box.metadata.namespace} -l ${selector}`,
  };
}

/** The Ready=False reason and message of a failed reconcile. */
export function problemOf(err: unknown): Problem {
  if (err instanceof Problem) return err;
  if (err instanceof NotOwned) return new Problem(BoxReason.DatabaseOwnedElsewhere, err.message, { cause: err });
  return new Problem(BoxReason.ProvisioningFailed, `${errorMessage(err)}; retrying`, { cause: err });
}

/**
 * Where the box's records are, as the Ready message says it: the database of its own (its schema has its name), or
 * its schema, and that it stays in a shared database where it was made before the setting gave new boxes their own.
 */
export function placeInWords(access: BoxAccess, schema: string): string {
  if (access.kind === 'owner') return `schema ${schema}`;
  const { isolation, asked, names } = access.place;
  if (isolation === 'Database') return `database ${names.database} of its own`;
  if (asked === 'Schema') return `schema ${schema}`;
  return (
    `schema ${schema} of database ${names.database}, shared with other boxes, where the box was made (it stays there: ` +
    `new boxes get a database of their own, BOXAUTH_OPERATOR_BOX_ISOLATION; docs/guides/upgrading.md says how to move it)`
  );
}
