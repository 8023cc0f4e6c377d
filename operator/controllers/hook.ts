// Hook resources → Hook records: the team's own code the box asks at sign-in and at every token
// (crds/hook.yaml, api/hooks/). Validation is the REST API's: the URL's shape, the match conditions
// compiled, the CA bundle read, the signing secret a Standard Webhooks one (./signing-secret.ts:
// spec.secretRef, sealed).
//
// A Hook that cannot be (a refused URL, conditions that do not compile, a CA bundle without a
// certificate) has no record (RecordRefused): a Hook the box cannot call as written is never
// called. It may go without a signing secret when its calls carry the box's token (boxToken).
import {
  administeredUrlProblem,
  caBundleProblem,
  conditionProblems,
  type Hook,
  hooks,
  hookSecret,
  type HookSpec,
  sealHookSecret,
} from '../../api/public.js';
import type { ControllerDeps, Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { HOOKS, type KObject } from '../kube.js';
import { HookReason } from '../reasons.js';
import { baseUrlOf } from './box-manifests.js';
import type { BoxController } from './box.js';
import { fieldProblem, SigningSecretController, type SigningTemplate } from './signing-secret.js';

export type HookResource = Resource<HookSpec>;

const HOOK: SigningTemplate<Hook> = {
  refused: HookReason.HookRefused,
  problems: (record, box) => [
    record.url === undefined ? undefined : fieldProblem('spec.url', administeredUrlProblem(record.url, baseUrlOf(box))),
    ...Object.entries(conditionProblems(record)).map(([field, why]) => `spec.${field}: ${why.join('; ')}`),
    record.caBundle === undefined ? undefined : fieldProblem('spec.caBundle', caBundleProblem(record.caBundle)),
  ],
  withoutSecret: (record) =>
    record.boxToken === true ? undefined : 'set spec.secretRef (a Standard Webhooks signing secret) or spec.boxToken: true',
};

export class HookController extends SigningSecretController<HookSpec, 'Hook'> {
  constructor(informer: ObjectCache<HookResource>, secrets: ObjectCache<KObject>, deps: ControllerDeps, boxes: BoxController) {
    super('hook', HOOKS, informer, secrets, deps, boxes, hooks, { seal: sealHookSecret, open: hookSecret }, HOOK);
  }
}
