// Attacks on issue 53's expressions over HTTP: an expression nested deeper than the stack (refused
// when written, never a 500), and a claim that references the person's data thousands of times
// (a small value to evaluate, megabytes of JSON in every token: left out, the token stays small).
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { Box, basic, boxForSuite } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { pepReadsPeople } from '../support/pep.js';

const CALLBACK = 'https://wiki.example/cb';
/** A CEL list literal of `n` ints: small to write, `n` iterations to range over. */
const ints = (n: number): string => `[${Array.from({ length: n }, (_, i) => i).join(', ')}]`;

describe('attacks on cel expressions and shaped claims', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;

  boxForSuite((b, r) => ([box, root] = [b, r]));

  describe('an expression nested deeper than the stack', function () {
    // Parsed by @bufbuild/cel, then walked by recursion by the checker and the planner; within
    // the 4,096 characters an AccessPolicy's expression may have.
    const deep = `${Array(2000).fill('1').join('+')}==1`;

    it('an AccessPolicy: 422 naming the nesting, not a 500', async function () {
      const res = await box.json('PUT', '/AccessPolicy/too-deep', { engine: 'cel', cel: deep }, root);
      expect(res.status, res.text).to.equal(422);
      expect(JSON.stringify(res.body.errors)).to.include('nested more than 250 deep');
    });

    it('a claim of a Client: 422 naming the claim', async function () {
      const res = await box.json(
        'PUT',
        '/Client/too-deep',
        { grant_types: ['client_credentials'], claims: { roles: `${Array(3000).fill('user.id').join(' + ')}` } },
        root,
      );
      expect(res.status, res.text).to.equal(422);
      expect(res.body.errors).to.have.property('claims.roles');
    });

    it('an expression over the length cel-go allows: 422', async function () {
      const res = await box.json('PUT', '/AccessPolicy/too-long', { engine: 'cel', cel: `request.uri == "${'a'.repeat(100_001)}"` }, root);
      expect(res.status, res.text).to.be.oneOf([413, 422]);
    });
  });

  describe('an AuthZEN search through a costly policy', function () {
    let pep: string;
    let alice: string;

    before(async function () {
      alice = String((await box.json('POST', '/users', { email: 'alice@example.com', password: 'alice-password-1' }, root)).body.id);
      const resources = Array.from({ length: 600 }, (_, i) => ({ type: 'doc', id: `d${i}` }));
      const app = await box.json('PUT', '/App/heavy', { urls: ['https://heavy.example'], resources }, root);
      expect(app.status, app.text).to.equal(201);
      // True, and about 70,000 units of the 100,000 one decision may spend (api/policy/budget.ts: each iteration, comparison and read).
      const costly = await box.json(
        'PUT',
        '/AccessPolicy/heavy-costly',
        { app: 'heavy', engine: 'cel', cel: `${ints(100)}.all(x, ${ints(100)}.all(y, x != -1))` },
        root,
      );
      expect(costly.status, costly.text).to.equal(201);
      const { secret } = await box.addClient('heavy-pep', {}, { policy: false });
      await box.json(
        'PUT',
        '/AccessPolicy/heavy-pep-asks',
        { engine: 'cel', link: [{ id: 'heavy-pep', resourceType: 'Client' }], cel: 'request.uri.startsWith("/apps/heavy/access/v1/")' },
        root,
      );
      await pepReadsPeople(box, root, 'heavy-pep');
      pep = (await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('heavy-pep', secret) })).body
        .access_token;
    });

    it('ends a page where the request’s cost budget runs out, and the next page goes on from there', async function () {
      // Without a budget per request, one page decides all 600 candidates (the most a body of 2,000 values declares): 42 million units.
      const ask = (token?: string) =>
        box.json(
          'POST',
          '/apps/heavy/access/v1/search/resource',
          {
            subject: { type: 'user', id: alice },
            action: { name: 'view' },
            resource: { type: 'doc' },
            page: { limit: 1000, ...(token ? { token } : {}) },
          },
          pep,
        );
      const first = await ask();
      expect(first.status, first.text).to.equal(200);
      expect(first.body.results.length).to.be.within(1, 200);
      expect(first.body.page.next_token).to.be.a('string').and.not.equal('');
      const second = await ask(first.body.page.next_token);
      expect(second.status, second.text).to.equal(200);
      // Every candidate is allowed: the second page starts right after the first's last.
      const last = Number(first.body.results.at(-1).id.slice(1));
      expect(second.body.results[0]).to.deep.equal({ type: 'doc', id: `d${last + 1}` });
    });
  });

  describe('a claim that multiplies the person’s data', function () {
    before(async function () {
      const made = await box.json(
        'POST',
        '/users',
        { email: 'ada@example.com', password: 'ada-password-1', data: JSON.stringify({ blob: 'x'.repeat(1000) }) },
        root,
      );
      expect(made.status, made.text).to.equal(201);
      await box.addClient(
        'wiki',
        {
          grant_types: ['authorization_code'],
          first_party: true,
          auth: { authorization_code: { redirect_uri: CALLBACK, token_format: 'jwt' } },
          // 10,000 references to a kilobyte: cheap for the meter, 10 MB of JSON.
          claims: { huge: `${ints(100)}.map(a, ${ints(100)}.map(b, user.data))`, team: '"blue"' },
        },
        { secret: 'wiki-secret-123', policy: false },
      );
    });

    it('is left out of the tokens, which stay small; the other claims stay', async function () {
      const browser = new FormAgent(box);
      expect((await browser.signIn('ada@example.com', 'ada-password-1')).status).to.equal(303);
      const query = new URLSearchParams({ client_id: 'wiki', redirect_uri: CALLBACK, response_type: 'code', scope: 'openid' });
      const redirect = await browser.get(`/auth/authorize?${query}`);
      const code = new URL(redirect.headers.get('location')!).searchParams.get('code')!;
      const res = await box.form(
        '/auth/token',
        { grant_type: 'authorization_code', code, redirect_uri: CALLBACK },
        { Authorization: basic('wiki', 'wiki-secret-123') },
      );
      expect(res.status).to.equal(200);
      expect(res.text.length).to.be.below(64 * 1024);
      for (const token of [res.body.id_token as string, res.body.access_token as string]) {
        const claims = decodeJwt(token);
        expect(claims).not.to.have.property('huge');
        expect(claims).to.have.property('team', 'blue');
      }
    });
  });
});
