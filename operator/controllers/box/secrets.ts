// The Secrets a Box owns (database URL, signing key, root client, admin): made
// when absent, used as they are when an admin made them first, taken over when
// a deleted Box of the same name left them behind.
import { SECRETS, type Kube } from '../../kube.js';
import { ensureOwned, MANAGED_LABELS, ownerReference } from '../../owned.js';
import type { SecretObject } from '../../secrets.js';
import { clusterSecretsNamedBy } from './cnpg.js';
import type { BoxResource } from './types.js';

/** The Secret's values: created with make() and owned by the Box when absent; used as it is when present. */
export function ensureBoxSecret(
  kube: Kube,
  box: BoxResource,
  name: string,
  make: () => Record<string, string> | Promise<Record<string, string>>,
  annotations: Record<string, string> = {},
): Promise<SecretObject> {
  return ensureOwned<SecretObject>(kube, SECRETS, box, name, async () => ({
    metadata: {
      name,
      namespace: box.metadata.namespace,
      labels: { ...MANAGED_LABELS, 'boxauth.io/box': box.metadata.name },
      annotations,
      ownerReferences: [ownerReference(box)],
    },
    type: 'Opaque',
    stringData: await make(),
  }));
}

/**
 * The Secrets the Box's spec names, which others write and the operator only reads: a change to one is news for the
 * Box. With a CloudNativePG Cluster, its application Secret: <cluster>-app, or the one the status says the Cluster's
 * bootstrap gave it.
 */
export function secretsNamedBy(box: BoxResource): string[] {
  const used = (box.status?.database as { secret?: unknown } | undefined)?.secret;
  const names = [
    box.spec?.database?.secretRef?.name,
    ...clusterSecretsNamedBy(box),
    typeof used === 'string' ? used : undefined,
    box.spec?.tls?.secretName,
    box.spec?.smtp?.passwordSecretRef?.name,
  ];
  return [...new Set(names.filter((n): n is string => n !== undefined))];
}
