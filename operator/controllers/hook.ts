// Hook resources → Hook records: the team's own code the box asks at sign-in and at every token
// (crds/hook.yaml, api/hooks/). Validation is the REST API's: the URL's shape, the match conditions
// compiled, the CA bundle read, the signing secret a Standard Webhooks one.
//
// The signing secret comes from spec.secretRef (key signing-secret unless it says another), sealed
// under the box's factor key (controllers/sealed-secret.ts). A Hook that cannot be (a refused URL,
// conditions that do not compile, a bad secret) has no record (RecordRefused): a Hook the box
// cannot call as written is never called.
import {
  administeredUrlProblem,
  caBundleProblem,
  conditionProblems,
  type Hook,
  hooks,
  hookSecret,
  type HookSpec,
  sealHookSecret,
  secretProblem,
  type Stored,
} from '../../api/public.js';
import { Problem, type ControllerDeps, type Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { HOOKS, type KObject } from '../kube.js';
import { HookReason } from '../reasons.js';
import { baseUrlOf } from './box-manifests.js';
import type { BoxController, BoxResource } from './box.js';
import { RecordRefused, type Desired } from './records.js';
import { SealedSecretController } from './sealed-secret.js';

export type HookResource = Resource<HookSpec>;

export class HookController extends SealedSecretController<HookSpec, 'Hook'> {
  constructor(informer: ObjectCache<HookResource>, secrets: ObjectCache<KObject>, deps: ControllerDeps, boxes: BoxController) {
    super('hook', HOOKS, informer, secrets, deps, boxes, hooks, {
      seal: sealHookSecret,
      open: (key, id, sealed) => hookSecret(key, id, sealed),
    });
  }

  secretSource(obj: HookResource): { name: string; key: string } | undefined {
    const ref = obj.spec?.secretRef;
    return ref && { name: ref.name, key: ref.key ?? 'signing-secret' };
  }

  protected async desired(obj: HookResource, box: BoxResource, stored: Stored<Hook> | undefined): Promise<Desired<Hook>> {
    const record = this.baseRecord(obj, ['secretRef']);
    const problems = [
      ...(record.url === undefined ? [] : [administeredUrlProblem(record.url, baseUrlOf(box))].map((p) => p && `spec.url ${p}`)),
      ...Object.entries(conditionProblems(record)).map(([field, why]) => `spec.${field}: ${why.join('; ')}`),
      ...(record.caBundle === undefined ? [] : [caBundleProblem(record.caBundle)].map((p) => p && `spec.caBundle ${p}`)),
    ].filter((p): p is string => p !== undefined);
    if (problems.length) throw new RecordRefused(HookReason.HookRefused, problems.join('; '));
    const secretSealed = await this.sealedSecret(obj, box, stored, record.id, (secret) => {
      const problem = secretProblem(secret);
      return problem === undefined
        ? undefined
        : new RecordRefused(HookReason.InvalidSecret, `the signing secret in spec.secretRef ${problem}`);
    });
    if (secretSealed === null && record.boxToken !== true)
      throw new Problem(HookReason.SecretRequired, 'set spec.secretRef (a Standard Webhooks signing secret) or spec.boxToken: true');
    return { record, secretSealed };
  }
}
