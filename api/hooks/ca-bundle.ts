// A Hook's caBundle: PEM certificates in base64, as an admission webhook's clientConfig.caBundle.
import { X509Certificate } from 'node:crypto';

const PEM = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Why `caBundle` cannot be the certificates a hook's is checked against; undefined when it can. */
export function caBundleProblem(caBundle: string): string | undefined {
  const pem = Buffer.from(caBundle, 'base64').toString('utf8');
  const certificates = pem.match(PEM) ?? [];
  if (!certificates.length) return 'must be the base64 of PEM certificates (-----BEGIN CERTIFICATE-----)';
  for (const [i, certificate] of certificates.entries()) {
    try {
      new X509Certificate(certificate);
    } catch {
      return `holds a certificate (the ${i + 1}. one) that cannot be read`;
    }
  }
  return undefined;
}
