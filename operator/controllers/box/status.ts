// The Box's status, decided from what was read, without I/O: the Available
// condition from its Deployment, and the Ready=False reason of a failure.
import { errorMessage } from '../../../api/errors.js';
import { NotOwned } from '../../boxdb.js';
import type { NewCondition } from '../../conditions.js';
import { Problem } from '../../controller.js';
import { BoxReason, ConditionType } from '../../reasons.js';
import type { BoxResource, DeploymentObject } from './types.js';

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
