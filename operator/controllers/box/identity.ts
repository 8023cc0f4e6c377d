// Who the API pods are in the cluster: the ServiceAccount they run as, and,
// while the box has workload tokens reviewed by the API server (TokenReview),
// the ClusterRoleBinding of system:auth-delegator to it.
import type { Logger } from '../../../api/public.js';
import { Problem } from '../../controller.js';
import { CLUSTER_ROLE_BINDINGS, SERVICE_ACCOUNTS, type Kube } from '../../kube.js';
import { ensureOwned } from '../../owned.js';
import { BoxReason } from '../../reasons.js';
import { apiServiceAccount, boxNames, tokenReviewBinding, usesTokenReview } from '../box-manifests.js';
import type { BoxResource } from './types.js';

/** The ServiceAccount the API pods run as: spec.serviceAccountName, else one of the Box's own. */
export async function ensureServiceAccount(kube: Kube, box: BoxResource): Promise<string> {
  if (box.spec?.serviceAccountName) return box.spec.serviceAccountName;
  const ns = box.metadata.namespace!;
  const name = boxNames(box).serviceAccount;
  await ensureOwned(kube, SERVICE_ACCOUNTS, box, name, () => apiServiceAccount(box), {
    foreign: () =>
      new Problem(
        BoxReason.ServiceAccountConflict,
        `ServiceAccount ${ns}/${name} exists and is not the operator's; set spec.serviceAccountName to run the box as it, or delete it`,
      ),
  });
  return name;
}

/**
 * The ClusterRoleBinding of system:auth-delegator to the pods' ServiceAccount while the box has tokens
 * reviewed by the API server; deleted when it no longer does. Its name, when it exists.
 */
export async function ensureTokenReviewRights(kube: Kube, log: Logger, box: BoxResource): Promise<string | undefined> {
  const name = boxNames(box).tokenReviewBinding;
  if (usesTokenReview(box)) {
    await kube.apply(CLUSTER_ROLE_BINDINGS, undefined, tokenReviewBinding(box));
    return name;
  }
  if (box.status?.tokenReviewBinding && (await kube.delete(CLUSTER_ROLE_BINDINGS, undefined, name))) {
    log.info(
      { box: `${box.metadata.namespace}/${box.metadata.name}`, clusterRoleBinding: name },
      'the box no longer uses TokenReview: removed its system:auth-delegator binding',
    );
  }
  return undefined;
}
