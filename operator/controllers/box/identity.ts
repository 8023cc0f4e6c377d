// Who the API pods are in the cluster: the ServiceAccount they run as, and,
// while the box has workload tokens reviewed by the API server (TokenReview),
// its place among the subjects of the chart's ClusterRoleBinding of system:auth-delegator.
import type { Logger } from '../../../api/public.js';
import { Problem } from '../../controller.js';
import { CLUSTER_ROLE_BINDINGS, isConflict, SERVICE_ACCOUNTS, type KObject, type Kube } from '../../kube.js';
import { ensureOwned } from '../../owned.js';
import { BoxReason } from '../../reasons.js';
import { apiServiceAccount, boxNames, tokenReviewSubject, usesTokenReview } from '../box-manifests.js';
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

/** A subject of a ClusterRoleBinding, as RBAC writes it. */
interface Subject {
  kind: string;
  name: string;
  namespace?: string;
  apiGroup?: string;
}

type BindingObject = KObject & { subjects?: Subject[] };

/** Tries of the binding's read-modify-write before the reconcile gives up and is retried with backoff. */
const CONFLICT_TRIES = 5;

/**
 * system:auth-delegator for the pods' ServiceAccount while the box has tokens reviewed by the API
 * server, and not after. It is granted in the one ClusterRoleBinding the chart makes
 * (settings.tokenReviewBinding), whose subjects are the operator's to keep, a namespace's (one box
 * each) its active Box's: so the operator's RBAC names that binding alone (get, update), and a stolen
 * operator token can neither create nor delete any ClusterRoleBinding, the cluster-admin's included
 * (charts/boxauth/templates/rbac.yaml). Its name, while the box is in it.
 */
export async function ensureTokenReviewRights(kube: Kube, log: Logger, box: BoxResource, binding: string): Promise<string | undefined> {
  const wanted = usesTokenReview(box) ? tokenReviewSubject(box) : undefined;
  if (await setNamespaceSubject(kube, binding, box.metadata.namespace!, wanted)) {
    log.info(
      { box: `${box.metadata.namespace}/${box.metadata.name}`, clusterRoleBinding: binding, serviceAccount: wanted?.name ?? null },
      wanted
        ? "bound system:auth-delegator to the box's ServiceAccount"
        : 'the box no longer uses TokenReview: removed it from system:auth-delegator',
    );
  }
  return wanted ? binding : undefined;
}

/** The Box gone (its finalizer): its namespace's ServiceAccount leaves the binding. */
export async function dropTokenReviewRights(kube: Kube, box: BoxResource, binding: string): Promise<void> {
  await setNamespaceSubject(kube, binding, box.metadata.namespace!, undefined);
}

/**
 * Makes the binding's ServiceAccount subjects of `namespace` exactly `wanted` (none when undefined),
 * leaving every other subject as it is; an update of the resourceVersion read, so two boxes' reconciles
 * (or two operators) racing are applied one after the other. Whether it changed anything.
 */
async function setNamespaceSubject(kube: Kube, name: string, namespace: string, wanted: Subject | undefined): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    const binding = await kube.find<BindingObject>(CLUSTER_ROLE_BINDINGS, undefined, name);
    if (!binding) {
      if (!wanted) return false;
      throw new Problem(
        BoxReason.TokenReviewBindingMissing,
        `ClusterRoleBinding ${name} (the chart's, of system:auth-delegator) does not exist, and the operator may not create one: install the chart again`,
      );
    }
    const subjects = binding.subjects ?? [];
    const others = subjects.filter((s) => !(s.kind === 'ServiceAccount' && s.namespace === namespace));
    const next = wanted ? [...others, wanted] : others;
    if (JSON.stringify(next) === JSON.stringify(subjects)) return false;
    try {
      await kube.replace(CLUSTER_ROLE_BINDINGS, undefined, name, { ...binding, subjects: next });
      return true;
    } catch (err) {
      if (!isConflict(err) || attempt >= CONFLICT_TRIES) throw err;
    }
  }
}
