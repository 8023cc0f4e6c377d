// spec.tls names a Secret the operator does not write (cert-manager's, or an
// admin's): the pods get it only once it holds a certificate and key that make
// a pair. Until then the Service and Deployment stay as they are, and pods that
// run keep serving what they have.
import { checkPair, errorMessage } from '../../../api/public.js';
import { Problem } from '../../controller.js';
import { BoxReason } from '../../reasons.js';
import { secretData, type SecretObject } from '../../secrets.js';
import { TLS_KEYS } from '../box-manifests.js';
import type { BoxResource } from './types.js';

/**
 * Why the Secret of spec.tls (as read: undefined when missing) cannot be given to the pods yet: missing
 * (cert-manager writes it once the certificate is issued), without tls.crt or tls.key, or with a pair that
 * does not load. Undefined when it can, or when the Box asks for no TLS.
 */
export function tlsProblem(box: BoxResource, secret: SecretObject | undefined): Problem | undefined {
  const name = box.spec?.tls?.secretName;
  if (!name) return undefined;
  const notReady = (why: string): Problem =>
    new Problem(
      BoxReason.TLSSecretNotReady,
      `Secret ${box.metadata.namespace}/${name} (spec.tls.secretName) ${why}; the box's Deployment is not made or changed until it holds a certificate and its key`,
    );
  if (!secret) return notReady('does not exist');
  const data = secretData(secret);
  const missing = Object.values(TLS_KEYS).filter((k) => !data[k]);
  if (missing.length) return notReady(`has no ${missing.join(' and ')}`);
  try {
    checkPair({ cert: data[TLS_KEYS.cert]!, key: data[TLS_KEYS.key]! });
  } catch (err) {
    return notReady(`holds no certificate and key that make a pair (${errorMessage(err)})`);
  }
  return undefined;
}
