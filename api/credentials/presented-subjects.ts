// A `sub` a client presents back to the box (an id_token_hint, an AuthZEN subject, a SCIM id)
// read as that client's subs are made (./subjects.ts subjectLookup), and only so: client A's
// pairwise sub presented by client B names nobody.
import type { Queryable } from '../db/pool.js';
import { idsOfSubjects } from '../store/users.js';
import { subjectLookup, type SubjectClient, type SubjectSettings } from './subjects.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  pool: Queryable;
  subjects: SubjectSettings;
}

/** The row id of the person `sub`, presented by `client`, names; undefined: nobody. */
export async function personOfSubject(svc: Needs, client: SubjectClient, sub: string): Promise<number | undefined> {
  return (await peopleOfSubjects(svc, client, [sub])).get(sub);
}

/**
 * The row ids of the people `subs`, presented by `client`, name, by sub (those naming nobody are
 * absent). One query for them all: a directory names a group's members by their subs.
 */
export async function peopleOfSubjects(svc: Needs, client: SubjectClient, subs: string[]): Promise<Map<string, number>> {
  const found = subs.map((sub) => [sub, subjectLookup(svc.subjects, client, sub)] as const);
  const opaque = await idsOfSubjects(
    svc.pool,
    found.flatMap(([, f]) => (f && 'subject' in f ? [f.subject] : [])),
  );
  const people = new Map<string, number>();
  for (const [sub, f] of found) {
    const id = f === undefined ? undefined : 'id' in f ? f.id : opaque.get(f.subject);
    if (id !== undefined) people.set(sub, id);
  }
  return people;
}
