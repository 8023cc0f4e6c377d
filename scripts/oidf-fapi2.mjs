// The box's side of the OpenID Foundation's FAPI 2.0 plans (fapi2-oidc, fapi2-plain;
// ../shared/oidf/README.md, "The product's setup"), run by scripts/oidf-setup before each: the
// harness registers oidf-fapi-client and oidf-fapi-client2 with RFC 7591's names only, and an
// administrator declares them FAPI 2.0 clients (profile: fapi2, docs/guides/fapi2.md) with a PUT of
// the record as it is read plus the profile. Idempotent.
/* global process */
import { boxCaller } from './oidf-ssf.mjs';

export const FAPI2_CLIENTS = ['oidf-fapi-client', 'oidf-fapi-client2'];
/** The suite sends the second client back to its callback with a query of its own (the redirect URI its configuration gives that client). */
const SECOND_CLIENT_QUERY = '?dummy1=lorem&dummy2=ipsum';

export async function holdToFapi2(base) {
  const token = process.env.OIDF_ROOT_TOKEN;
  if (!token) throw new Error('OIDF_ROOT_TOKEN is not set');
  const call = boxCaller(base, token);
  for (const id of FAPI2_CLIENTS) {
    const client = await call('GET', `/Client/${id}`);
    delete client.meta; // the box's, not part of a written record
    if (id === FAPI2_CLIENTS[1]) {
      const { redirect_uri: uri, redirect_uris: uris, ...code } = client.auth.authorization_code;
      const registered = uris ?? [uri];
      const withQuery = registered[0].split('?')[0] + SECOND_CLIENT_QUERY;
      client.auth.authorization_code = { ...code, redirect_uris: [...new Set([...registered, withQuery])] };
    }
    await call('PUT', `/Client/${id}`, { ...client, profile: 'fapi2' });
  }
}
