// spec.smtp.passwordSecretRef names a Secret the operator does not write (an admin's): the pods
// read the password from it through their environment, so a Deployment made before it exists
// would leave them failing to start. Until then the Service and Deployment stay as they are.
import { Problem } from '../../controller.js';
import { BoxReason } from '../../reasons.js';
import { secretData, type SecretObject } from '../../secrets.js';
import type { BoxResource } from './types.js';

/** Why the Secret of spec.smtp.passwordSecretRef (as read: undefined when missing) cannot be given to the pods yet. */
export function smtpProblem(box: BoxResource, secret: SecretObject | undefined): Problem | undefined {
  const ref = box.spec?.smtp?.passwordSecretRef;
  if (!ref) return undefined;
  const why = !secret ? 'does not exist' : secretData(secret)[ref.key] ? undefined : `has no key ${ref.key}`;
  if (!why) return undefined;
  return new Problem(
    BoxReason.SMTPSecretNotReady,
    `Secret ${box.metadata.namespace}/${ref.name} (spec.smtp.passwordSecretRef) ${why}; the box's Deployment is not made or changed until it holds the SMTP password`,
  );
}
