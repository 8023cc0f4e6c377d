// The person as the box's decisions see them (PrincipalUser: what request.user is made of), read
// once and cached by id (the `users` cache, api/server.ts). The cache drops a person when their
// row, a membership or a linked identity changes (the change feed: migrations 002 and 027), and
// empties when a group changes: a decision at the gate reads none of this from the database.
import type { Queryable } from '../db/pool.js';
import { identitiesOf } from '../store/identity-providers.js';
import { dataOf, getUser } from '../store/users.js';
import type { PrincipalUser } from '../types.js';
import { scimAttributes } from './scim/resources.js';

export async function principalUser(db: Queryable, id: number): Promise<PrincipalUser | undefined> {
  const user = await getUser(db, id);
  if (!user) return undefined;
  const identities = await identitiesOf(db, user.id);
  return {
    id: String(user.id),
    subject: user.subject,
    email: user.email,
    emailVerified: user.emailVerified,
    groups: user.groups.map((g) => ({ id: String(g.id), name: g.name })),
    data: dataOf(user),
    scim: scimAttributes(user),
    identities: identities.map((i) => ({ provider: i.provider, subject: i.subject })),
  };
}
