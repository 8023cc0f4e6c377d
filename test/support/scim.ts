// A directory's side of the SCIM door (RFC 7644) for tests: the schema URNs, a connection of one
// provisioning client (its bearer token, the headers its requests carry), the bodies and query
// strings directories send, and checks of what the door answers.
import { expect } from 'chai';
import { basic, type Box, type JsonResponse } from './box.js';

export const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

export type Scim = (method: string, path: string, body?: unknown) => Promise<JsonResponse>;

/** A directory's connection to `box`: client `id` (allowed everything), one bearer token, and the headers its requests carry. */
export async function provisioner(box: Box, id: string, headers: Record<string, string>): Promise<Scim> {
  const { secret } = await box.addClient(id, {});
  const granted = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
  expect(granted.status, granted.text).to.equal(200);
  const token = granted.body.access_token as string;
  return (method, path, body) =>
    box.request(method, `/scim/v2${path}`, {
      headers: { ...headers, Authorization: `Bearer ${token}` },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
}

/**
 * The REST API's id of the person whose sign-in name is `email` (their row id): SCIM names people
 * by their public sub, which on a box of opaque subs is another id altogether.
 */
export async function restIdOf(box: Box, token: string, email: string): Promise<number> {
  const found = await box.json('GET', `/users?email=${encodeURIComponent(email)}`, undefined, token);
  expect(found.body, `a person ${email}`).to.have.length(1);
  return found.body[0].id as number;
}

/** A filter as a query string value: spaces %20, quotes %22, @ %40, as Okta's documented requests show. */
export const filter = (expression: string): string => `filter=${encodeURIComponent(expression)}`;

/** A PatchOp body with these operations. */
export const patch = (...Operations: unknown[]): unknown => ({ schemas: [PATCH_OP], Operations });

export const listed = (res: JsonResponse): any[] => (res.body.Resources ?? []) as any[];

/** A ListResponse of this many resources, as directories read one. */
export function expectList(res: JsonResponse, total: number, what?: string): void {
  expect(res.status, res.text).to.equal(200);
  expect(res.headers.get('content-type')).to.match(/^application\/scim\+json/);
  expect(res.body.schemas).to.deep.equal([LIST]);
  expect(res.body.totalResults, what).to.equal(total);
  expect(listed(res), what).to.have.length(total);
}

/** RFC 7644's error body, with this status (as a string too) and scimType. */
export function expectError(res: JsonResponse, status: number, scimType?: string, what?: string): void {
  expect(res.status, `${what ?? ''} ${res.text}`).to.equal(status);
  expect(res.body.schemas).to.deep.equal([ERROR]);
  expect(res.body.status).to.equal(String(status));
  if (scimType) expect(res.body.scimType, what).to.equal(scimType);
}
