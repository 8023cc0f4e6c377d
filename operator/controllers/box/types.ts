// What the Box controller's files share: the resource, the operator's settings
// for boxes, and what each step needs to do its I/O.
import type { BoxSpec, Logger } from '../../../api/public.js';
import type { BoxDatabases, BoxIsolation } from '../../boxdb.js';
import type { Resource } from '../../controller.js';
import type { EventRecorder } from '../../events.js';
import type { Kube, KObject } from '../../kube.js';

export type { BoxSpec };
export type BoxResource = Resource<BoxSpec>;
export type DeploymentObject = KObject & {
  spec?: { replicas?: number };
  status?: { availableReplicas?: number; observedGeneration?: number };
};

/** A Service as the operator reads it: which type it is (an ExternalName while its box is hosted). */
export type ServiceObject = KObject & { spec?: { type?: string } };

/** How the operator runs the host: the operator's configuration (operator/config.ts). */
export interface HostSettings {
  /** The operator's own namespace. */
  namespace: string;
  image: string;
  imagePullPolicy: string;
  /** 'auto': the operator sets none, and leaves spec.replicas to whoever scales the host (an HPA). */
  replicas: number | 'auto';
  resources: Record<string, unknown>;
  /** Where the operator asks the host whether it answers for a box. */
  url: string;
}

export const BOX_FINALIZER = 'boxauth.io/box';

export interface BoxSettings {
  /** The operator's own database (DATABASE_URL): boxes without spec.database live there. */
  adminUrl: string;
  /** host[:port] the API pods use for that database, when not the host of adminUrl. */
  boxDatabaseHost: string | undefined;
  /**
   * host[:port] of a transaction pooler (PgBouncer) in front of that database: the API pods' queries go there, and
   * to boxDatabaseHost (or adminUrl's host) only for the change feed and migrations. Unset: no pooler.
   */
  boxDatabasePoolerHost: string | undefined;
  /** Where a new box goes through an administrative URL (BOXAUTH_OPERATOR_BOX_ISOLATION); a box stays where it was made. */
  boxIsolation: BoxIsolation;
  image: string;
  imagePullPolicy: string;
  /**
   * Whoever may write a Box chooses the code its pods run (spec.image): pinned, every box runs `image`, and a Box
   * whose spec.image names another is refused (ImageNotAllowed) rather than run as another image than it says.
   */
  pinImage: boolean;
  /** The chart's ClusterRoleBinding of system:auth-delegator whose subjects the operator keeps (BOXAUTH_OPERATOR_TOKEN_REVIEW_BINDING). */
  tokenReviewBinding: string;
  /** The host of hosted boxes (spec.serving: Hosted): where it runs and how the operator reaches it. */
  host: HostSettings;
}

/** The I/O a step of the Box's reconcile may do. */
export interface BoxWork {
  kube: Kube;
  log: Logger;
  events: EventRecorder;
  databases: BoxDatabases;
  settings: BoxSettings;
}
