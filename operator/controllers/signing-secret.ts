// The resources whose calls the box signs per Standard Webhooks (a Webhook's events, a Hook's calls):
// the record is the spec as the REST API would store it, written only when the kind's own checks
// find nothing the box would refuse (RecordRefused: no record at all, one written before removed);
// the signing secret comes from spec.secretRef (key signing-secret unless it says another), must be
// a Standard Webhooks secret, and is sealed under the box's factor key (./sealed-secret.ts): the box
// signs with it, so it cannot be hashed. What differs between the kinds is their SigningTemplate.
import { secretProblem, type Resources, type ResourceTable, type Stored } from '../../api/public.js';
import { Problem, type ControllerDeps, type Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import type { KObject, ResourceType } from '../kube.js';
import type { Reason } from '../reasons.js';
import type { BoxController, BoxResource } from './box.js';
import { RecordRefused, type Desired } from './records.js';
import { SealedSecretController, type Sealer } from './sealed-secret.js';

type SignedKind = 'Webhook' | 'Hook';

/** What one kind checks of its record before the box may call with it. */
export interface SigningTemplate<R> {
  /** The reason of a record refused for `problems`. */
  refused: Reason;
  /** What the box would refuse in the record, each naming its field; none (or only undefined) when nothing. */
  problems(record: R, box: BoxResource): (string | undefined)[];
  /** Without spec.secretRef: what to set (SecretRequired), or undefined when the record goes without (a Hook's boxToken). */
  withoutSecret(record: R): string | undefined;
}

/** `problem` (a refusal's words) said of `field`, or undefined when there is none. */
export const fieldProblem = (field: string, problem: string | undefined): string | undefined => problem && `${field} ${problem}`;

/** Reasons both kinds have (operator/reasons.ts), by the same name. */
const InvalidSecret = 'InvalidSecret' satisfies Reason;
const SecretRequired = 'SecretRequired' satisfies Reason;

export abstract class SigningSecretController<
  S extends { secretRef?: { name: string; key?: string } },
  K extends SignedKind,
> extends SealedSecretController<S, K> {
  constructor(
    name: string,
    type: ResourceType,
    informer: ObjectCache<Resource<S>>,
    secrets: ObjectCache<KObject>,
    deps: ControllerDeps,
    boxes: BoxController,
    table: ResourceTable<Resources[K]>,
    sealer: Sealer,
    private readonly template: SigningTemplate<Resources[K]>,
  ) {
    super(name, type, informer, secrets, deps, boxes, table, sealer);
  }

  secretSource(obj: Resource<S>): { name: string; key: string } | undefined {
    const ref = obj.spec?.secretRef;
    return ref && { name: ref.name, key: ref.key ?? 'signing-secret' };
  }

  protected async desired(obj: Resource<S>, box: BoxResource, stored: Stored<Resources[K]> | undefined): Promise<Desired<Resources[K]>> {
    const record = this.baseRecord(obj, ['secretRef']);
    const problems = this.template.problems(record, box).filter((p): p is string => p !== undefined);
    if (problems.length) throw new RecordRefused(this.template.refused, problems.join('; '));
    const secretSealed = await this.sealedSecret(obj, box, stored, record.id, (secret) => {
      const problem = secretProblem(secret);
      return problem === undefined ? undefined : new RecordRefused(InvalidSecret, `the signing secret in spec.secretRef ${problem}`);
    });
    const missing = secretSealed === null ? this.template.withoutSecret(record) : undefined;
    if (missing !== undefined) throw new Problem(SecretRequired, missing);
    return { record, secretSealed };
  }
}
