// Debian's slapd as an LDAP directory for the tests (make slapd installs it): the test's own
// process, on free loopback ports, ldap:// (StartTLS) and ldaps:// with a certificate of the
// test's CA, an mdb database in a temporary directory, seeded with people and nested groups
// through the memberof overlay (so memberOf is the directory's own, as it is in production).
// Anonymous clients may bind (an empty password with a DN too) but read nothing; the service
// account reads everything.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Attribute, Change, Client } from 'ldapts';
import { eventually } from './box.js';
import { onFreePorts } from './ports.js';
import { testCa, type TestCa } from './tls.js';
import { stopChild } from './child.js';
import type { LdapSettings } from '../../api/people/upstream/profile.js';

const SLAPD = '/usr/sbin/slapd';
const SLAPPASSWD = '/usr/sbin/slappasswd';

export const BASE_DN = 'dc=example,dc=org';
export const PEOPLE_DN = `ou=people,${BASE_DN}`;
export const GROUPS_DN = `ou=groups,${BASE_DN}`;
const ROOT_DN = `cn=admin,${BASE_DN}`;

export interface Person {
  uid: string;
  dn: string;
  password: string;
  mail: string;
  cn: string;
}

const person = (uid: string, cn: string): Person => ({
  uid,
  dn: `uid=${uid},${PEOPLE_DN}`,
  password: `${uid}'s password 7`,
  mail: `${uid}@example.org`,
  cn,
});

/** Who is in the directory. `search` is the service account, outside ou=people. */
export const PEOPLE = {
  alice: person('alice', 'Alice Liddell'),
  bob: person('bob', 'Bob Marley'),
  /** In 500 groups, g001 to g500. */
  carol: person('carol', 'Carol Danvers'),
};

export const SERVICE = { uid: 'search', dn: `uid=search,ou=services,${BASE_DN}`, password: "the search account's password" };

const groupDN = (cn: string): string => `cn=${cn},${GROUPS_DN}`;

/**
 * The groups, by name, with their members: alice is in eng, eng in staff, staff in everyone
 * (nesting); ring-a and ring-b hold each other (a cycle); carol is in g001..g500.
 */
export const GROUPS: Record<string, string[]> = {
  eng: [PEOPLE.alice.dn],
  staff: [groupDN('eng'), PEOPLE.bob.dn],
  everyone: [groupDN('staff')],
  'ring-a': [PEOPLE.alice.dn, groupDN('ring-b')],
  'ring-b': [groupDN('ring-a')],
  ...Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`g${String(i + 1).padStart(3, '0')}`, [PEOPLE.carol.dn]])),
};

export interface Slapd {
  /** ldap://127.0.0.1:<port> (StartTLS offered). */
  ldapUrl: string;
  /** ldaps://127.0.0.1:<port>. */
  ldapsUrl: string;
  /** The CA that signed the directory's certificate (PEM). */
  ca: string;
  stop(): Promise<void>;
}

function slapdConf(dir: string, tls: { caFile: string; certFile: string; keyFile: string }): string {
  return `include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/nis.schema
include /etc/ldap/schema/inetorgperson.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
# A DN with an empty password binds as anonymous here (RFC 4513 §5.1.2's unauthenticated bind),
# as it does on the many directories that accept it: the box must never send one.
allow bind_anon_dn
pidfile ${dir}/slapd.pid
argsfile ${dir}/slapd.args
TLSCACertificateFile ${tls.caFile}
TLSCertificateFile ${tls.certFile}
TLSCertificateKeyFile ${tls.keyFile}

database mdb
maxsize 268435456
suffix "${BASE_DN}"
rootdn "${ROOT_DN}"
rootpw ${ROOT_PASSWORD}
directory ${dir}/db
index objectClass eq
index uid,member eq
# The service account reads any number of groups (a person in 500 is the test of it).
limits dn.exact="${SERVICE.dn}" size=unlimited
overlay memberof

# Passwords are only ever compared by a bind; nobody reads them.
access to attrs=userPassword
  by anonymous auth
  by * none
# People and groups: the service account reads them, a person their own entry, anonymous nothing.
access to *
  by dn.exact="${SERVICE.dn}" read
  by self read
  by * none
`;
}

const ROOT_PASSWORD = 'root-password-of-a-test-directory';

const hashed = (password: string): string => execFileSync(SLAPPASSWD, ['-h', '{SSHA}', '-s', password], { encoding: 'utf8' }).trim();

async function seed(ldapUrl: string): Promise<void> {
  const client = new Client({ url: ldapUrl, timeout: 10_000, connectTimeout: 10_000 });
  try {
    await client.bind(ROOT_DN, ROOT_PASSWORD);
    await client.add(BASE_DN, { objectClass: ['dcObject', 'organization'], dc: 'example', o: 'Example' });
    for (const ou of ['people', 'groups', 'services']) await client.add(`ou=${ou},${BASE_DN}`, { objectClass: 'organizationalUnit', ou });
    await client.add(SERVICE.dn, {
      objectClass: ['account', 'simpleSecurityObject'],
      uid: SERVICE.uid,
      userPassword: hashed(SERVICE.password),
    });
    for (const p of Object.values(PEOPLE)) {
      const [sn] = p.cn.split(' ').slice(-1);
      await client.add(p.dn, {
        objectClass: 'inetOrgPerson',
        uid: p.uid,
        cn: p.cn,
        sn: sn!,
        mail: p.mail,
        userPassword: hashed(p.password),
      });
    }
    // A group is added with the members already there (groupOfNames needs one), and then given
    // those that were not (a cycle), so the overlay writes every memberOf as in a live directory.
    const added = new Set<string>(Object.values(PEOPLE).map((p) => p.dn));
    const later: [string, string[]][] = [];
    for (const [cn, members] of Object.entries(GROUPS)) {
      const now = members.filter((m) => added.has(m));
      await client.add(groupDN(cn), { objectClass: 'groupOfNames', cn, member: now });
      added.add(groupDN(cn));
      if (now.length < members.length) later.push([cn, members.filter((m) => !now.includes(m))]);
    }
    for (const [cn, members] of later) {
      await client.modify(groupDN(cn), new Change({ operation: 'add', modification: new Attribute({ type: 'member', values: members }) }));
    }
  } finally {
    await client.unbind();
  }
}

const listening = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** slapd on free ports: again on new ones when another process took one first ("Address already in use"). */
export function startSlapd(): Promise<Slapd> {
  if (!fs.existsSync(SLAPD)) return Promise.reject(new Error(`${SLAPD} not found: install Debian's slapd (make slapd; make test does)`));
  return onFreePorts(2, ([ldapPort, ldapsPort]) => startSlapdOn(ldapPort, ldapsPort));
}

async function startSlapdOn(ldapPort: number, ldapsPort: number): Promise<Slapd> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-slapd-'));
  fs.mkdirSync(path.join(dir, 'db'));
  const ca: TestCa = testCa(fs.mkdtempSync(path.join(dir, 'tls-')));
  const { certFile, keyFile } = ca.issue('slapd');
  fs.writeFileSync(path.join(dir, 'slapd.conf'), slapdConf(dir, { caFile: ca.caFile, certFile, keyFile }));
  const ldapUrl = `ldap://127.0.0.1:${ldapPort}`;
  const ldapsUrl = `ldaps://127.0.0.1:${ldapsPort}`;
  // -d 0: in the foreground, so this process is slapd itself and stop() ends it by its pid.
  const child = spawn(SLAPD, ['-f', path.join(dir, 'slapd.conf'), '-h', `${ldapUrl}/ ${ldapsUrl}/`, '-d', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const collect = (chunk: Buffer): void => void logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const stop = async (): Promise<void> => {
    await stopChild(child);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const ready = await eventually(
      'slapd listening',
      async () => (child.exitCode !== null ? 'exited' : (await listening(ldapPort)) && 'ready'),
      20_000,
    );
    if (ready === 'exited') throw new Error(`slapd exited with ${child.exitCode}`);
    await seed(ldapUrl);
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${logs.slice(-20).join('\n')}`);
  }
  return { ldapUrl, ldapsUrl, ca: ca.pem, stop };
}

/** A provider's settings for this directory: StartTLS with its CA, the service account searching, groups by member. */
export function directorySettings(slapd: Slapd, over: Partial<LdapSettings> = {}): LdapSettings {
  return {
    url: slapd.ldapUrl,
    startTLS: true,
    ca: slapd.ca,
    bindDN: SERVICE.dn,
    timeoutSeconds: 2,
    userSearch: { baseDN: PEOPLE_DN, filter: '(objectClass=inetOrgPerson)', usernameAttribute: 'uid' },
    groupSearch: { baseDN: GROUPS_DN },
    ...over,
  };
}
