// Names people read — emails and group names — show what they are: no control or
// invisible character gets in, wherever a name enters (the API, which the admin UI
// and the CLI use, and the sign-up page), and two emails that differ only in case
// or form (any script, composed or not, the Kelvin sign, fullwidth letters) are one
// account: one can be made, the other is taken, and signing in finds that one.
import { expect } from 'chai';
import { Box, boxForSuite, type JsonResponse } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

const HIDDEN = /holds a control or invisible character \(U\+[0-9A-F]{4,5}\)/;

describe('names people read', function () {
  this.timeout(120_000);
  let box: Box;
  let root: string;
  boxForSuite((b, r) => ([box, root] = [b, r]), {
    env: { BOXAUTH_REGISTRATION: 'true', BOXAUTH_SIGN_UP_MAX_PER_ADDRESS: '100000', BOXAUTH_SIGN_UP_MAX_PER_BOX: '100000' },
  });

  const api = (method: string, path: string, body?: unknown): Promise<JsonResponse> => box.json(method, path, body, root);
  const everyone = async (): Promise<unknown> => ({
    users: (await api('GET', '/users?_count=1000')).body,
    groups: (await api('GET', '/groups?_count=1000')).body,
  });
  const signUp = async (email: string): Promise<JsonResponse> => (await new FormAgent(box).signUpPoster())(email, 'a-good-password-1');

  describe('control and invisible characters', function () {
    const EMAILS = [
      '\u001b]0;owned\u0007@example.com', // a terminal's title
      'ann\u202Emoc.elpmaxe@example.com', // right-to-left override
      'ad\u200Bmin@example.com', // zero-width space
      'x\u0085@example.com', // C1 next line
      'bom\uFEFF@example.com',
    ];
    const NAMES = ['ops\u001b[2J', 'ad\u2066mins', 'team\u200D', 'line\u2028two', 'tab\there'];

    it('an email holding one is 422 naming email, at POST and PUT /users; nothing is written', async function () {
      const ann = (await api('POST', '/users', { email: 'plain@example.com', password: 'plain-password-1' })).body;
      const before = await everyone();
      for (const email of EMAILS) {
        const created = await api('POST', '/users', { email, password: 'a-good-password-1' });
        expect(created.status, JSON.stringify(email)).to.equal(422);
        expect(created.body.errors.email[0]).to.match(HIDDEN);
        expect(created.body.entity).not.to.have.property('password');
        const changed = await api('PUT', `/users/${ann.id}`, { email });
        expect(changed.status, JSON.stringify(email)).to.equal(422);
        expect(changed.body.errors.email[0]).to.match(HIDDEN);
      }
      expect(await everyone()).to.deep.equal(before);
    });

    it('a group name holding one is 422 naming name, at POST and PUT /groups; nothing is written', async function () {
      const group = (await api('POST', '/groups', { name: 'plain-group' })).body;
      const before = await everyone();
      for (const name of NAMES) {
        const created = await api('POST', '/groups', { name, description: 'x' });
        expect(created.status, JSON.stringify(name)).to.equal(422);
        expect(created.body.errors.name[0]).to.match(HIDDEN);
        const changed = await api('PUT', `/groups/${group.id}`, { name });
        expect(changed.status, JSON.stringify(name)).to.equal(422);
        expect(changed.body.errors.name[0]).to.match(HIDDEN);
      }
      expect(await everyone()).to.deep.equal(before);
    });

    it("a record's name (a Client's or an App's description, a provider's displayName) holding one is 422; nothing is written", async function () {
      for (const c of ['\u202E', '\u2067', '\u200E', '\u061C', '\u3164', '\uFEFF']) {
        const cases: [string, Record<string, unknown>, string][] = [
          ['/Client/named', { grant_types: ['client_credentials'], secret: 'a-named-secret', description: `Billing${c}` }, 'description'],
          ['/App/named', { urls: ['https://named.internal'], description: `Orders${c}` }, 'description'],
          ['/IdentityProvider/named', { type: 'github', github: { clientId: 'x' }, secret: 's', displayName: `Corp${c}` }, 'displayName'],
        ];
        for (const [path, body, field] of cases) {
          const res = await api('PUT', path, body);
          expect(res.status, `${path} ${JSON.stringify(c)}`).to.equal(422);
          expect(res.body.errors[field][0]).to.match(HIDDEN);
          expect((await api('GET', path)).status).to.equal(404);
        }
      }
      // A description's lines are its own; a name in another script is a name.
      expect((await api('PUT', '/App/named', { urls: ['https://named.internal'], description: 'Orders\nשירות הזמנות' })).status).to.equal(
        201,
      );
    });

    it('the sign-up page answers 422 with the message beside Email, and makes no account', async function () {
      const before = await everyone();
      for (const email of EMAILS) {
        const res = await signUp(email);
        expect(res.status, JSON.stringify(email)).to.equal(422);
        expect(res.text).to.match(/role="alert"[^>]*>[^<]*holds a control or invisible character/);
      }
      expect(await everyone()).to.deep.equal(before);
    });
  });

  describe('one account per email, in any case and form', function () {
    it('Élodie beside élodie, the Kelvin sign beside K, fullwidth beside ASCII: taken, at POST /users and at sign-up', async function () {
      expect((await api('POST', '/users', { email: 'élodie@example.com', password: 'elodie-password-1' })).status).to.equal(201);
      expect((await api('POST', '/users', { email: 'kim@example.com', password: 'kim-password-1' })).status).to.equal(201);
      expect((await api('POST', '/users', { email: 'strasse@example.com', password: 'strasse-password-1' })).status).to.equal(201);
      const users = async (): Promise<unknown> => (await api('GET', '/users?_count=1000')).body;
      const before = await users();
      for (const email of [
        'Élodie@example.com',
        'E\u0301lodie@example.com', // É decomposed
        'ÉLODIE@EXAMPLE.COM',
        '\u212Aim@example.com', // Kelvin sign
        '\uFF4B\uFF49\uFF4D@example.com', // fullwidth
        'KIM@\uFF45xample.com',
        'STRA\u1E9EE@example.com',
      ]) {
        const created = await api('POST', '/users', { email, password: 'stranger-password-1' });
        expect(created.status, email).to.equal(422);
        expect(created.body.errors).to.deep.equal({ email: ['email is already taken'] });
        const page = await signUp(email);
        expect(page.status, email).to.equal(422);
        expect(page.text).to.include('This email already has an account');
      }
      expect(await users()).to.deep.equal(before);
    });

    it('signing in and looking up by email find the account whatever the form typed', async function () {
      const signedIn = await new FormAgent(box).signIn('E\u0301LODIE@Example.com', 'elodie-password-1');
      expect(signedIn.status, signedIn.text).to.equal(303);
      const found = await api('GET', `/users?email=${encodeURIComponent('\u212AIM@example.com')}`);
      expect(found.body.map((u: { email: string }) => u.email)).to.deep.equal(['kim@example.com']);
    });

    it('an email is stored as typed, composed (NFC)', async function () {
      const created = await api('POST', '/users', { email: 'Zoe\u0301@example.com', password: 'zoe-password-1' });
      expect(created.status).to.equal(201);
      expect(created.body.email).to.equal('Zo\u00E9@example.com');
    });

    it('the same address in eight forms at once, by administrators and strangers: one account', async function () {
      const forms = [
        'race@example.com',
        'RACE@example.com',
        'Race@Example.com',
        '\uFF52ace@example.com',
        'rAce@example.com',
        'raCE@EXAMPLE.com',
        'R\uFF21CE@example.com',
        'racE@example.COM',
      ];
      const answers = await Promise.all(
        forms.map((email, i) => (i % 2 ? signUp(email) : api('POST', '/users', { email, password: 'race-password-1' }))),
      );
      const made = answers.filter((r) => r.status === 201 || r.status === 303);
      expect(made.length, JSON.stringify(answers.map((r) => r.status))).to.equal(1);
      expect(answers.filter((r) => r.status === 422).length).to.equal(7);
      const users = (await api('GET', '/users?q=ace@')).body as { email: string }[];
      expect(users.length, JSON.stringify(users)).to.equal(1);
    });
  });
});
