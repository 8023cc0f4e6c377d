// A `sub` a client presents back to the box (an id_token_hint, an AuthZEN subject, a SCIM id)
// read as that client's subs are made (./subjects.ts subjectLookup), and only so: client A's
// pairwise sub presented by client B names nobody.
import type { Queryable } from '../db/pool.js';
import { findUserBySubject } from '../store/users.js';
import { subjectLookup, type SubjectClient, type SubjectSettings } from './subjects.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  pool: Queryable;
  subjects: SubjectSettings;
}

/** The row id of the person `sub`, presented by `client`, names; undefined: nobody. */
export async function personOfSubject(svc: Needs, client: SubjectClient, sub: string): Promise<number | undefined> {
  const found = subjectLookup(svc.subjects, client, sub);
  if (found === undefined) return undefined;
  if ('id' in found) return found.id;
  return (await findUserBySubject(svc.pool, found.subject))?.id;
}
