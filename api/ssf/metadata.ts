// The transmitter's metadata (SSF 1.0 §7.1), served at /.well-known/ssf-configuration: public, as
// every discovery document of the box, and `issuer` the box's base URL exactly ("MUST be identical
// to the issuer value used to retrieve the configuration", §7.2.3).
import { POLL, PUSH } from './streams.js';

/** The paths of the stream management API (SSF 1.0 §8.1), under the box's base URL. */
export const SSF_PATHS = {
  configuration: '/ssf/streams',
  status: '/ssf/status',
  addSubject: '/ssf/subjects/add',
  removeSubject: '/ssf/subjects/remove',
  verification: '/ssf/verify',
} as const;

/** SSF 1.0 final, as the CAEP interoperability profile §2.3.1 asks transmitters to say. */
export const SPEC_VERSION = '1_0';

export function transmitterMetadata(baseUrl: string): Record<string, unknown> {
  return {
    spec_version: SPEC_VERSION,
    issuer: baseUrl,
    jwks_uri: `${baseUrl}/.well-known/jwks.json`,
    delivery_methods_supported: [PUSH, POLL],
    configuration_endpoint: `${baseUrl}${SSF_PATHS.configuration}`,
    status_endpoint: `${baseUrl}${SSF_PATHS.status}`,
    add_subject_endpoint: `${baseUrl}${SSF_PATHS.addSubject}`,
    remove_subject_endpoint: `${baseUrl}${SSF_PATHS.removeSubject}`,
    verification_endpoint: `${baseUrl}${SSF_PATHS.verification}`,
    // §7.1.1: receivers get their token from the box's token endpoint (client credentials).
    authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
    // §7.1: every person whose events the stream's receiver may have (its policies decide), until it removes one.
    default_subjects: 'ALL',
  };
}
