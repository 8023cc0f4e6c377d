// The language a mail goes out in (docs/guides/email.md#templates-and-languages): the page's it was
// asked from, else — a mail of an administrator's change, a directory's, a job's, or a page that
// sent none — the person's own, as their record says it when the mail is sent, else the box's
// default (English: ./templates.ts). Without the person's, a German person's mail of a change made
// through the API went out in English, whatever their record said.
import type { Queryable } from '../db/pool.js';
import type { ClaimedMail } from '../store/mail-outbox.js';
import { dataOf, findUserByEmail, getUser, type UserRow } from '../store/users.js';

/** A BCP 47 tag as the box passes one on (as api/http/language.ts pageLanguage), lower case; else none. */
function tag(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  // SCIM's locale is often written the POSIX way (de_DE); its preferredLanguage as Accept-Language (de-CH, en;q=0.8).
  const first = value.split(',')[0]!.split(';')[0]!.trim().replaceAll('_', '-');
  return /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$/.test(first) ? first.toLowerCase() : undefined;
}

/**
 * A person's language: their `locale` claim as an administrator set it (the `locale` member of
 * their `data`, what their ID tokens say), else their directory's SCIM `preferredLanguage` (RFC
 * 7643 §4.1.1: "for selecting a localized user interface"), else its SCIM `locale`.
 */
export function personLanguage(user: Pick<UserRow, 'data' | 'scim'>): string | undefined {
  const scim = user.scim ?? {};
  return tag(dataOf(user).locale) ?? tag(scim.preferredLanguage) ?? tag(scim.locale);
}

/** The language `mail` is written in: the page's, else that of the person it is for (by id, else by its address), else none. */
export async function mailLanguage(db: Queryable, mail: ClaimedMail): Promise<string | undefined> {
  if (mail.language !== undefined) return mail.language;
  const person = mail.userId !== undefined ? await getUser(db, mail.userId) : await findUserByEmail(db, mail.address);
  return person && personLanguage(person);
}
