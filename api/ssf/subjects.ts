// Subject identifiers (RFC 9493; SSF 1.0 §3): the `sub_id` of each SET, and the subjects a receiver
// names when it adds one to a stream or removes one. A person of the box is `iss_sub` (the box's
// issuer and the `sub` the receiver's client is given of them, as its ID tokens name them,
// api/credentials/subjects.ts); a session of theirs adds
// its `sid` in a `complex` subject (SSF 1.0 §3.2: user and session); the stream itself, in its
// verification events, is `opaque` with the stream's id (SSF 1.0 §8.1.4.1).

/** A subject identifier as RFC 9493 §3 shapes it: a format and its members. */
export type SubjectId = { format: string } & Record<string, unknown>;

/** How a receiver named a person: by the address they sign in with, or by the `sub` its client is given of them. */
export type PersonName = { email: string } | { sub: string };

/** The `sub_id` of an event about the person whose `sub` (as the receiver sees them) is `sub`, and the browser session `sid` when it is about one. */
export function personSubject(issuer: string, sub: string, sid: string | null): SubjectId {
  const person = { format: 'iss_sub', iss: issuer, sub };
  return sid === null ? person : { format: 'complex', user: person, session: { format: 'opaque', id: sid } };
}

/** SSF 1.0 §8.1.4.1: a verification event's subject is the stream, as `opaque` with its id. */
export const streamSubject = (streamId: string): SubjectId => ({ format: 'opaque', id: streamId });

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 1024;

/**
 * The person a subject names, or why it names none the box can act on (a message for a 400). A
 * subject of another issuer names nobody here; an `opaque` id is a person's `sub`; a `complex`
 * subject names its `user` member. Whether that person exists is not said here (SSF 1.0 §8.1.3.1:
 * the transmitter may silently ignore a subject).
 */
export function personNamed(issuer: string, subject: unknown, depth = 0): PersonName | string | undefined {
  if (typeof subject !== 'object' || subject === null || Array.isArray(subject)) return 'subject must be a subject identifier (RFC 9493)';
  const s = subject as Record<string, unknown>;
  switch (s.format) {
    case 'email':
      return isString(s.email) ? { email: s.email } : 'an email subject needs its "email"';
    case 'iss_sub':
      if (!isString(s.iss) || !isString(s.sub)) return 'an iss_sub subject needs "iss" and "sub"';
      return s.iss === issuer ? { sub: s.sub } : undefined;
    case 'opaque':
      return isString(s.id) ? { sub: s.id } : 'an opaque subject needs its "id"';
    case 'complex':
      if (depth > 0) return 'a complex subject cannot nest another';
      return s.user === undefined ? 'a complex subject needs a "user" member naming the person' : personNamed(issuer, s.user, depth + 1);
    default:
      return typeof s.format === 'string'
        ? `subject format "${s.format}" is not one the box takes (email, iss_sub, opaque, complex)`
        : 'subject needs a "format"';
  }
}
