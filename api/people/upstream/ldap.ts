// Sign-in against an LDAP directory or Active Directory: the service account (or an anonymous
// search) finds the one entry of the username, a bind as that entry checks the password, and the
// entry's attributes and groups make the profile. The box never keeps the password.
import type { Entry, Filter } from 'ldapts';
import { ldap } from './ldap-library.js';
import { ldapAttributes } from '../../schema/ldap-attributes.js';
import { failure, LdapConnection } from './ldap-connection.js';
import { UPSTREAM_TIMEOUT_MS, UpstreamError, emailFrom, type LdapSettings, type UpstreamProfile } from './profile.js';

const MAX_USERNAME = 256;
const MAX_GROUP_LEVELS = 10;
/** Member DNs per group search (an OR of equality filters): a filter a directory takes whole. */
const MEMBERS_PER_SEARCH = 50;
/** Groups read at once on one connection (memberOf: one base search per group). */
const READS_AT_ONCE = 16;
const DEFAULT_GROUP_FILTER = '(|(objectClass=groupOfNames)(objectClass=group))';

export async function ldapSignIn(
  settings: LdapSettings,
  bindPassword: string | undefined,
  username: string,
  password: string,
): Promise<UpstreamProfile> {
  const name = username.trim();
  // Refused before anything is sent: an empty password makes a simple bind unauthenticated
  // (RFC 4513 §5.1.2), which many directories accept as anonymous; a server written in C may
  // cut a password at a NUL, to the same effect.
  if (name === '' || name.length > MAX_USERNAME || name.includes('\0'))
    throw new UpstreamError('refused', 'not a username the directory could hold');
  if (password.trim() === '' || password.includes('\0'))
    throw new UpstreamError('refused', 'an empty password (an unauthenticated bind) is refused');
  if (settings.bindDN && !bindPassword)
    throw new UpstreamError('misconfigured', 'the service account (bindDN) has no password in its secret: a configuration fault');
  const timeoutMs = settings.timeoutSeconds ? settings.timeoutSeconds * 1000 : UPSTREAM_TIMEOUT_MS;

  const service = await LdapConnection.open(settings, timeoutMs);
  try {
    if (settings.bindDN) {
      try {
        await service.bind(settings.bindDN, bindPassword!);
      } catch (err) {
        if (err instanceof ldap().ResultCodeError)
          throw new UpstreamError(
            'misconfigured',
            `the directory refused the service account's bind (${settings.bindDN}): a configuration fault`,
          );
        throw failure('the service bind', err, timeoutMs);
      }
    }
    const entry = await findPerson(service, settings, name, timeoutMs);
    await checkPassword(settings, timeoutMs, entry.dn, password);
    // The groups are read by the service account, on its own connection: what the person may read
    // of the directory does not change which groups they are in.
    const groups = settings.groupSearch ? await groupsOf(service, settings.groupSearch, entry, timeoutMs) : [];
    return profileOf(settings, entry, groups);
  } finally {
    await service.close();
  }
}

const attrs = (settings: LdapSettings) => ldapAttributes(settings.userSearch);

/** The one entry whose username attribute is exactly `username`, else refused. */
async function findPerson(service: LdapConnection, settings: LdapSettings, username: string, timeoutMs: number): Promise<Entry> {
  const a = attrs(settings);
  const memberOf = settings.groupSearch?.memberOfAttribute;
  // The username is a value in the request's encoding (an AttributeValueAssertion), never text of
  // a filter: no character of it can become filter syntax (RFC 4511 §4.5.1.7, RFC 4515 §3).
  const filter = new (ldap().AndFilter)({
    filters: [
      configuredFilter(settings.userSearch.filter, '(objectClass=*)', 'userSearch'),
      new (ldap().EqualityFilter)({ attribute: settings.userSearch.usernameAttribute, value: username }),
    ],
  });
  let entries: Entry[];
  try {
    entries = await service.search(settings.userSearch.baseDN, filter, {
      scope: 'sub',
      attributes: [...new Set([a.id, a.email, a.name, ...(memberOf ? [memberOf] : [])].filter((x) => x !== 'dn'))],
      binary: a.id.toLowerCase() === 'objectguid' ? [a.id] : [],
      sizeLimit: 2,
    });
  } catch (err) {
    if (err instanceof ldap().SizeLimitExceededError)
      throw new UpstreamError('refused', 'more than one entry of the directory has this username');
    if (err instanceof ldap().ResultCodeError && err.code === 32)
      throw new UpstreamError(
        'unavailable',
        `the user search base ${settings.userSearch.baseDN} is not there, or not visible to the account searching: a configuration fault`,
      );
    throw failure('the user search', err, timeoutMs);
  }
  if (entries.length === 0) throw new UpstreamError('refused', 'no entry of the directory has this username');
  if (entries.length > 1) throw new UpstreamError('refused', 'more than one entry of the directory has this username');
  // An empty DN would make the bind that checks the password anonymous.
  if (!entries[0]!.dn.includes('=')) throw new UpstreamError('invalid', 'the entry found has no DN');
  return entries[0]!;
}

/** A bind as the person, on a connection of its own: it proves the password and nothing else runs as them. */
async function checkPassword(settings: LdapSettings, timeoutMs: number, dn: string, password: string): Promise<void> {
  const own = await LdapConnection.open(settings, timeoutMs);
  try {
    await own.bind(dn, password);
  } catch (err) {
    // The directory said no: a wrong password, or an account locked, disabled or expired.
    if (err instanceof ldap().ResultCodeError) throw new UpstreamError('refused', `the directory refused the person's bind (${err.name})`);
    throw failure("the person's bind", err, timeoutMs);
  } finally {
    await own.close();
  }
}

function configuredFilter(text: string | undefined, fallback: string, what: string): Filter {
  try {
    return ldap().FilterParser.parseString(text || fallback);
  } catch {
    throw new UpstreamError('unavailable', `the ${what} filter is not an LDAP filter: a configuration fault`);
  }
}

type GroupSearch = NonNullable<LdapSettings['groupSearch']>;

/** A DN as compared here: case and the spaces around separators do not make two groups. */
const dnKey = (dn: string): string => dn.toLowerCase().replace(/\s*([,=+])\s*/g, '$1');

/**
 * The names of the person's groups: those naming them as a member, or (memberOfAttribute) those
 * their entry names; nested, the groups of those groups too, up to 10 levels, each group once
 * (a cycle ends). A group search that fails fails the sign-in: a profile without its groups
 * would take the person out of every group that follows the directory.
 */
async function groupsOf(service: LdapConnection, gs: GroupSearch, person: Entry, timeoutMs: number): Promise<string[]> {
  const nameAttr = gs.nameAttribute || 'cn';
  const filter = configuredFilter(gs.filter, DEFAULT_GROUP_FILTER, 'groupSearch');
  const seen = new Set<string>();
  const names: string[] = [];
  const base = dnKey(gs.baseDN);
  const levels = gs.nested === false ? 1 : MAX_GROUP_LEVELS;
  try {
    if (gs.memberOfAttribute) {
      // The groups the entry names; each is read for its name (and, nested, its own memberOf).
      let level = values(person, gs.memberOfAttribute);
      for (let depth = 0; depth < levels && level.length > 0; depth++) {
        const fresh = level.filter((dn) => !seen.has(dnKey(dn)) && (dnKey(dn) === base || dnKey(dn).endsWith(`,${base}`)));
        for (const dn of fresh) seen.add(dnKey(dn));
        const next: string[] = [];
        for (let i = 0; i < fresh.length; i += READS_AT_ONCE) {
          const read = await Promise.all(
            fresh.slice(i, i + READS_AT_ONCE).map((dn) => readGroup(service, dn, filter, [nameAttr, gs.memberOfAttribute!])),
          );
          for (const group of read.flat()) {
            names.push(...values(group, nameAttr).slice(0, 1));
            next.push(...values(group, gs.memberOfAttribute));
          }
        }
        level = next;
      }
    } else {
      const memberAttr = gs.memberAttribute || 'member';
      let level = [person.dn];
      for (let depth = 0; depth < levels && level.length > 0; depth++) {
        const next: string[] = [];
        for (let i = 0; i < level.length; i += MEMBERS_PER_SEARCH) {
          const members = level
            .slice(i, i + MEMBERS_PER_SEARCH)
            .map((dn) => new (ldap().EqualityFilter)({ attribute: memberAttr, value: dn }));
          const groups = await service.search(
            gs.baseDN,
            new (ldap().AndFilter)({ filters: [filter, members.length === 1 ? members[0]! : new (ldap().OrFilter)({ filters: members })] }),
            {
              scope: 'sub',
              attributes: [nameAttr],
            },
          );
          for (const group of groups) {
            if (seen.has(dnKey(group.dn))) continue;
            seen.add(dnKey(group.dn));
            names.push(...values(group, nameAttr).slice(0, 1));
            next.push(group.dn);
          }
        }
        level = next;
      }
    }
  } catch (err) {
    throw failure('the group search', err, timeoutMs);
  }
  return [...new Set(names)];
}

/** The group at `dn` when it passes the group filter; none when it does not, or is gone. */
async function readGroup(service: LdapConnection, dn: string, filter: Filter, attributes: string[]): Promise<Entry[]> {
  try {
    return await service.search(dn, filter, { scope: 'base', attributes, sizeLimit: 1 });
  } catch (err) {
    if (err instanceof ldap().ResultCodeError && err.code === 32) return [];
    throw err;
  }
}

/** An attribute's values as strings, whatever the case the directory spelled its name in. */
function values(entry: Entry, attribute: string): string[] {
  const key = Object.keys(entry).find((k) => k.toLowerCase() === attribute.toLowerCase());
  const value = key === undefined ? [] : entry[key]!;
  return (Array.isArray(value) ? value : [value]).map((v) => (Buffer.isBuffer(v) ? v.toString('utf8') : v));
}

/** Active Directory's objectGUID: 16 bytes, the first three fields little-endian. */
function guidString(bytes: Buffer): string {
  const hex = (from: number, to: number, reverse: boolean): string => {
    const part = [...bytes.subarray(from, to)];
    return (reverse ? part.reverse() : part).map((b) => b.toString(16).padStart(2, '0')).join('');
  };
  return [hex(0, 4, true), hex(4, 6, true), hex(6, 8, true), hex(8, 10, false), hex(10, 16, false)].join('-');
}

function subjectOf(entry: Entry, idAttribute: string): string {
  if (idAttribute.toLowerCase() === 'dn') return entry.dn;
  const key = Object.keys(entry).find((k) => k.toLowerCase() === idAttribute.toLowerCase());
  const value = key === undefined ? undefined : entry[key];
  const one = Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
  if (Buffer.isBuffer(one)) {
    if (one.length !== 16) throw new UpstreamError('invalid', `the entry's ${idAttribute} is not a GUID`);
    return guidString(one);
  }
  if (typeof one !== 'string' || one === '') throw new UpstreamError('invalid', `the entry has no single ${idAttribute}, the person's id`);
  return one;
}

function profileOf(settings: LdapSettings, entry: Entry, groups: string[]): UpstreamProfile {
  const a = attrs(settings);
  const subject = subjectOf(entry, a.id);
  const { email, unusableEmail } = emailFrom(values(entry, a.email)[0]);
  const name = values(entry, a.name)[0];
  const claims: Record<string, unknown> = { dn: entry.dn };
  for (const attribute of new Set([a.id, a.email, a.name])) {
    if (attribute.toLowerCase() === 'dn') continue;
    const read = attribute === a.id ? [subject] : values(entry, attribute);
    if (read.length > 0) claims[attribute] = read.length === 1 ? read[0] : read;
  }
  return {
    subject,
    ...(email ? { email } : {}),
    ...(unusableEmail ? { unusableEmail } : {}),
    emailVerified: settings.emailVerified === true && email !== undefined,
    ...(name ? { name } : {}),
    groups,
    claims,
    amr: ['pwd'],
  };
}
