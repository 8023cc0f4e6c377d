// Signing in against a real LDAP directory (Debian's slapd, test/support/slapd.ts): the person's
// own bind after a search by the service account, their groups (nested, cycles, 500 of them),
// StartTLS and LDAPS with a CA, and what must never sign anyone in: a wrong or empty password,
// a username that is filter syntax, an anonymous search, a directory that is down or slow.
import { expect } from 'chai';
import net from 'node:net';
import { ldapSignIn } from '../../api/people/upstream/ldap.js';
import { UpstreamError, type LdapSettings, type UpstreamProfile } from '../../api/people/upstream/profile.js';
import { directorySettings, GROUPS_DN, PEOPLE, SERVICE, startSlapd, type Slapd } from '../support/slapd.js';
import { testCa } from '../support/tls.js';
import { freePort } from '../support/ports.js';
import { eventually } from '../support/box.js';

/** The failure of `work`, which must fail with an UpstreamError. */
async function failureOf(work: Promise<UpstreamProfile>): Promise<UpstreamError> {
  try {
    const profile = await work;
    throw new Error(`signed in as ${profile.subject} (${profile.email ?? ''})`);
  } catch (err) {
    if (!(err instanceof UpstreamError)) throw err;
    return err;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('LDAP directory sign-in (Debian slapd)', function () {
  this.timeout(60_000);
  let slapd: Slapd;
  before(async () => (slapd = await startSlapd()));
  after(async () => slapd?.stop());

  /** StartTLS with the directory's CA, the service account searching, groups by member. */
  const settings = (over: Partial<LdapSettings> = {}): LdapSettings => directorySettings(slapd, over);
  const signIn = (s: LdapSettings, username: string, password: string): Promise<UpstreamProfile> =>
    ldapSignIn(s, SERVICE.password, username, password);

  describe('a person signs in', function () {
    it('with StartTLS: their entryUUID, email, name and groups, nested and through a cycle', async function () {
      const alice = await signIn(settings(), 'alice', PEOPLE.alice.password);
      expect(alice.subject).to.match(UUID);
      expect(alice).to.deep.include({ email: PEOPLE.alice.mail, emailVerified: false, name: PEOPLE.alice.cn, amr: ['pwd'] });
      // eng ⊂ staff ⊂ everyone; ring-a and ring-b hold each other.
      expect([...alice.groups].sort()).to.deep.equal(['eng', 'everyone', 'ring-a', 'ring-b', 'staff']);
      expect(alice.claims).to.deep.equal({ dn: PEOPLE.alice.dn, entryUUID: alice.subject, mail: PEOPLE.alice.mail, cn: PEOPLE.alice.cn });
      // The same person the next time; another person is another subject.
      expect((await signIn(settings(), ' alice ', PEOPLE.alice.password)).subject).to.equal(alice.subject);
      expect((await signIn(settings(), 'bob', PEOPLE.bob.password)).subject).to.not.equal(alice.subject);
    });

    it('with LDAPS and the CA', async function () {
      const alice = await signIn(settings({ url: slapd.ldapsUrl, startTLS: undefined }), 'alice', PEOPLE.alice.password);
      expect(alice.email).to.equal(PEOPLE.alice.mail);
    });

    it('with groups read off their entry (memberOf), nested the same', async function () {
      const alice = await signIn(
        settings({ groupSearch: { baseDN: GROUPS_DN, memberOfAttribute: 'memberOf' } }),
        'alice',
        PEOPLE.alice.password,
      );
      expect([...alice.groups].sort()).to.deep.equal(['eng', 'everyone', 'ring-a', 'ring-b', 'staff']);
    });

    it('with only their own groups when nesting is off; none without a group search', async function () {
      const nested = false;
      expect(
        [...(await signIn(settings({ groupSearch: { baseDN: GROUPS_DN, nested } }), 'alice', PEOPLE.alice.password)).groups].sort(),
      ).to.deep.equal(['eng', 'ring-a']);
      const viaMemberOf = settings({ groupSearch: { baseDN: GROUPS_DN, nested, memberOfAttribute: 'memberOf' } });
      expect([...(await signIn(viaMemberOf, 'alice', PEOPLE.alice.password)).groups].sort()).to.deep.equal(['eng', 'ring-a']);
      expect((await signIn(settings({ groupSearch: undefined }), 'alice', PEOPLE.alice.password)).groups).to.deep.equal([]);
    });

    it("in 500 groups gets all 500, by member and by memberOf (which to carry is the mapping rules')", async function () {
      for (const groupSearch of [{ baseDN: GROUPS_DN }, { baseDN: GROUPS_DN, memberOfAttribute: 'memberOf' }]) {
        const carol = await signIn(settings({ groupSearch }), 'carol', PEOPLE.carol.password);
        expect(new Set(carol.groups).size).to.equal(500);
        expect(carol.groups).to.include.members(['g001', 'g250', 'g500']);
      }
    });

    it('with the email verified only where the provider says so; the DN as subject where asked', async function () {
      expect((await signIn(settings({ emailVerified: true }), 'alice', PEOPLE.alice.password)).emailVerified).to.equal(true);
      const userSearch = { ...settings().userSearch, idAttribute: 'dn' };
      expect((await signIn(settings({ userSearch }), 'alice', PEOPLE.alice.password)).subject).to.equal(PEOPLE.alice.dn);
    });

    it('not when the entry lacks its id attribute (invalid)', async function () {
      const userSearch = { ...settings().userSearch, idAttribute: 'employeeNumber' };
      expect((await failureOf(signIn(settings({ userSearch }), 'alice', PEOPLE.alice.password))).failure).to.equal('invalid');
    });
  });

  describe('refused', function () {
    it('a wrong password, an unknown user', async function () {
      expect((await failureOf(signIn(settings(), 'alice', PEOPLE.bob.password))).failure).to.equal('refused');
      expect((await failureOf(signIn(settings(), 'nobody', PEOPLE.alice.password))).failure).to.equal('refused');
    });

    // slapd here takes a DN with an empty password as an anonymous bind (allow bind_anon_dn), as
    // many directories do: sent, it would succeed and sign alice in without her password.
    it('an empty password, and one of spaces, before any bind', async function () {
      for (const password of ['', '   ']) {
        const err = await failureOf(signIn(settings(), 'alice', password));
        expect(err.failure, JSON.stringify(password)).to.equal('refused');
      }
    });

    it("a username that is filter syntax matches nobody, whoever's password comes with it", async function () {
      const usernames = [
        '*',
        'ali*',
        'alice)(uid=*',
        '*)(|(uid=*',
        'alice\\00',
        'alice\0',
        '(uid=alice)',
        SERVICE.uid,
        'x'.repeat(257),
        '',
      ];
      for (const username of usernames) {
        for (const password of [PEOPLE.alice.password, PEOPLE.bob.password, SERVICE.password]) {
          const err = await failureOf(signIn(settings(), username, password));
          expect(err.failure, `${JSON.stringify(username)}: ${err.message}`).to.equal('refused');
        }
      }
    });

    it('an anonymous search finds nobody: the directory shows anonymous nothing', async function () {
      const err = await failureOf(ldapSignIn(settings({ bindDN: undefined }), undefined, 'alice', PEOPLE.alice.password));
      expect(err.failure).to.equal('unavailable');
    });
  });

  describe('unavailable', function () {
    it("a CA that did not sign the directory's certificate, for StartTLS and for LDAPS", async function () {
      const other = testCa().pem;
      for (const s of [settings({ ca: other }), settings({ url: slapd.ldapsUrl, startTLS: undefined, ca: other })]) {
        const err = await failureOf(signIn(s, 'alice', PEOPLE.alice.password));
        expect(err.failure, err.message).to.equal('unavailable');
        expect(err.message).to.match(/TLS/);
      }
    });

    it('a service account whose bind is refused: a configuration fault, its password never said', async function () {
      const wrong = 'not the service password 1';
      const err = await failureOf(ldapSignIn(settings(), wrong, 'alice', PEOPLE.alice.password));
      expect(err.failure).to.equal('misconfigured');
      expect(err.message)
        .to.match(/configuration/)
        .and.not.include(wrong)
        .and.not.include(PEOPLE.alice.password);
    });

    it('a directory that is down: at once, not by waiting out the time limit', async function () {
      const port = await freePort();
      const err = await failureOf(signIn(settings({ url: `ldap://127.0.0.1:${port}` }), 'alice', PEOPLE.alice.password));
      expect(err.failure).to.equal('unavailable');
      expect(err.message)
        .to.match(/the directory failed/)
        .and.not.match(/did not answer/);
    });

    /** A TCP server that reads and never answers, but with `first` to the first request; and its open connections. */
    async function stalling(
      first?: (request: Buffer) => Buffer,
    ): Promise<{ url: (scheme: string) => string; open: Set<net.Socket>; close: () => Promise<void> }> {
      const open = new Set<net.Socket>();
      const server = net.createServer((socket) => {
        open.add(socket);
        socket.once('data', (request) => first && socket.write(first(request)));
        socket.resume(); // reads (and so sees the client close), never answers
        socket.on('close', () => open.delete(socket));
        socket.on('error', () => undefined);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as net.AddressInfo;
      return {
        url: (scheme) => `${scheme}://127.0.0.1:${port}`,
        open,
        close: () => new Promise((resolve) => server.close(() => resolve())),
      };
    }

    async function unavailableInTime(directory: Awaited<ReturnType<typeof stalling>>, url: string, startTLS: boolean): Promise<void> {
      const err = await failureOf(signIn(settings({ url, startTLS, timeoutSeconds: 1 }), 'alice', PEOPLE.alice.password));
      expect(err.failure, err.message).to.equal('unavailable');
      // Cut off by the time limit (the message says which step), not by anything else.
      expect(err.message, `${url} ${startTLS}`).to.match(/did not answer .* within 1 s/);
      await eventually('the connection closed', async () => directory.open.size === 0, 2000);
    }

    it('a directory that accepts and never answers: within the timeout, every connection closed', async function () {
      const directory = await stalling();
      try {
        for (const scheme of ['ldap', 'ldaps'])
          for (const startTLS of [true, false]) await unavailableInTime(directory, directory.url(scheme), startTLS);
      } finally {
        await directory.close();
      }
    });

    it('a directory that takes StartTLS, then stalls the handshake: within the timeout', async function () {
      // The StartTLS request's messageID (a short BER message: 30 len 02 01 id), answered success
      // (RFC 4511 §4.14.2: an ExtendedResponse, resultCode 0); then nothing.
      const directory = await stalling((request) =>
        Buffer.from([0x30, 0x0c, 0x02, 0x01, request[4]!, 0x78, 0x07, 0x0a, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00]),
      );
      try {
        await unavailableInTime(directory, directory.url('ldap'), true);
      } finally {
        await directory.close();
      }
    });
  });
});
