// AccessPolicy resources → access policy records. A policy that does not
// compile (a bad JSON Schema or matcho pattern) is not written: it would allow
// nothing in the box, and the author should hear why.
import { accessPolicies, type AccessPolicy, type AccessPolicySpec, ApiError, checkPolicyCompiles, type Stored } from '../../api/public.js';
import { Problem, type ControllerDeps, type Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { ACCESS_POLICIES } from '../kube.js';
import { AccessPolicyReason } from '../reasons.js';
import type { BoxController, BoxResource } from './box.js';
import { RecordController, type Desired } from './records.js';

export type AccessPolicyResource = Resource<AccessPolicySpec>;

export class AccessPolicyController extends RecordController<AccessPolicySpec, 'AccessPolicy'> {
  constructor(informer: ObjectCache<AccessPolicyResource>, deps: ControllerDeps, boxes: BoxController) {
    super('accesspolicy', ACCESS_POLICIES, informer, deps, boxes, accessPolicies);
  }

  protected async desired(
    obj: AccessPolicyResource,
    _box: BoxResource,
    stored: Stored<AccessPolicy> | undefined,
  ): Promise<Desired<AccessPolicy>> {
    const record = this.baseRecord(obj);
    try {
      checkPolicyCompiles(record);
    } catch (err) {
      if (err instanceof ApiError) throw new Problem(AccessPolicyReason.InvalidPolicy, err.message, { cause: err });
      throw err;
    }
    // A policy guards one thing (docs/architecture.md §7), as the REST API holds it: the CRD's rules see
    // an edit, not a record adopted from the REST API nor one the API server did not check.
    if (stored && stored.resource.app !== record.app) {
      const was = stored.resource.app ? `app "${stored.resource.app}"` : "the box's own API";
      throw new Problem(
        AccessPolicyReason.InvalidSpec,
        `spec.app cannot change: the policy "${record.id}" guards ${was}; create another policy for another target`,
      );
    }
    return { record };
  }
}
