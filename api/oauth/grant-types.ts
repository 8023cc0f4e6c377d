// The grant_types rule, one home for every way to a grant: the token endpoint (./token-endpoint.ts,
// through each grant's `permits`), the authorization endpoint and PAR (./authorization-request.ts)
// and the device authorization endpoint (./device.ts). A client may use the grants its grant_types
// lists, and is refused the others with one answer. RFC 6749 §5.2: "unauthorized_client: The
// authenticated client is not authorized to use this authorization grant type"; §4.1.2.1, at the
// authorization endpoint: "The client is not authorized to request an authorization code using this
// method."
import { OAuthError } from '../credentials/errors.js';
import type { Client, GrantType } from '../types.js';

/** Whether the client lists the grant in its grant_types. */
export const listedInGrantTypes =
  (type: GrantType) =>
  (client: Client): boolean =>
    client.grant_types.includes(type);

/** The refusal of a grant the client's grant_types does not list. */
export const notListedInGrantTypes = (client: Client, type: GrantType): OAuthError =>
  new OAuthError('unauthorized_client', `client "${client.id}" may not use the ${type} grant (add ${type} to its grant_types)`);
