// Webhook resources → Webhook records: where the box POSTs its events, as CloudEvents signed per
// Standard Webhooks (crds/webhook.yaml, api/webhooks/). Validation is the REST API's, with the
// same checks of the URL and of the signing secret (./signing-secret.ts: spec.secretRef, sealed).
//
// A URL the box would refuse leaves the resource with no record (RecordRefused): a Webhook that
// cannot be sent to sends nothing. It always needs its signing secret.
import { administeredUrlProblem, sealWebhookSecret, type Webhook, webhooks, webhookSecret, type WebhookSpec } from '../../api/public.js';
import type { ControllerDeps, Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { WEBHOOKS, type KObject } from '../kube.js';
import { WebhookReason } from '../reasons.js';
import { baseUrlOf } from './box-manifests.js';
import type { BoxController } from './box.js';
import { fieldProblem, SigningSecretController, type SigningTemplate } from './signing-secret.js';

export type WebhookResource = Resource<WebhookSpec>;

const WEBHOOK: SigningTemplate<Webhook> = {
  refused: WebhookReason.UrlRefused,
  // As the REST API does: the URL's shape now, its addresses at each send (administeredUrlProblem).
  problems: (record, box) => [fieldProblem('spec.url', administeredUrlProblem(record.url, baseUrlOf(box)))],
  withoutSecret: () => 'spec.secretRef is required: it names the Secret holding the signing secret',
};

export class WebhookController extends SigningSecretController<WebhookSpec, 'Webhook'> {
  constructor(informer: ObjectCache<WebhookResource>, secrets: ObjectCache<KObject>, deps: ControllerDeps, boxes: BoxController) {
    const sealer = { seal: sealWebhookSecret, open: webhookSecret };
    super('webhook', WEBHOOKS, informer, secrets, deps, boxes, webhooks, sealer, WEBHOOK);
  }
}
