// Webhook resources → Webhook records: where the box POSTs its events, as CloudEvents signed per
// Standard Webhooks (crds/webhook.yaml, api/webhooks/). Validation is the REST API's, with the
// same checks of the URL and of the signing secret.
//
// The signing secret comes from spec.secretRef (key signing-secret unless it says another), sealed
// under the box's factor key (controllers/sealed-secret.ts): the box signs with it, so it cannot be
// hashed. A secret that is no Standard Webhooks secret, or a URL the box would refuse, leaves the
// resource with no record (RecordRefused): a Webhook that cannot be sent to sends nothing.
import {
  administeredUrlProblem,
  sealWebhookSecret,
  secretProblem,
  type Stored,
  type Webhook,
  webhooks,
  webhookSecret,
  type WebhookSpec,
} from '../../api/public.js';
import { Problem, type ControllerDeps, type Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { WEBHOOKS, type KObject } from '../kube.js';
import { WebhookReason } from '../reasons.js';
import { baseUrlOf } from './box-manifests.js';
import type { BoxController, BoxResource } from './box.js';
import { RecordRefused, type Desired } from './records.js';
import { SealedSecretController } from './sealed-secret.js';

export type WebhookResource = Resource<WebhookSpec>;

export class WebhookController extends SealedSecretController<WebhookSpec, 'Webhook'> {
  constructor(informer: ObjectCache<WebhookResource>, secrets: ObjectCache<KObject>, deps: ControllerDeps, boxes: BoxController) {
    super('webhook', WEBHOOKS, informer, secrets, deps, boxes, webhooks, {
      seal: sealWebhookSecret,
      open: (key, id, sealed) => webhookSecret(key, id, sealed),
    });
  }

  secretSource(obj: WebhookResource): { name: string; key: string } | undefined {
    const ref = obj.spec?.secretRef;
    return ref && { name: ref.name, key: ref.key ?? 'signing-secret' };
  }

  protected async desired(obj: WebhookResource, box: BoxResource, stored: Stored<Webhook> | undefined): Promise<Desired<Webhook>> {
    const record = this.baseRecord(obj, ['secretRef']);
    // As the REST API does: the URL's shape now, its addresses at each send (administeredUrlProblem).
    const urlProblem = administeredUrlProblem(record.url, baseUrlOf(box));
    if (urlProblem) throw new RecordRefused(WebhookReason.UrlRefused, `spec.url ${urlProblem}`);
    const secretSealed = await this.sealedSecret(obj, box, stored, record.id, (secret) => {
      const problem = secretProblem(secret);
      return problem === undefined
        ? undefined
        : new RecordRefused(WebhookReason.InvalidSecret, `the signing secret in spec.secretRef ${problem}`);
    });
    if (secretSealed === null)
      throw new Problem(WebhookReason.SecretRequired, 'spec.secretRef is required: it names the Secret holding the signing secret');
    return { record, secretSealed };
  }
}
