// The AuthZEN door (api/http/routes/authzen.ts) against the Authorization API 1.0
// (final, January 2026), field by field, with the spec's own non-normative examples
// (§5, §6, §7, §9, §10) adapted to a box app: "alice@example.com" is a user of the
// box named by her id, the documents and accounts are the paths of the app
// `library`, and the PEP is a client whose token a box policy allows.
import { expect } from 'chai';
import { Box, basic, boxForSuite, eventually, type JsonResponse } from '../support/box.js';
import { linkDummyIdentity } from '../support/identities.js';
import { provisioner, restIdOf, USER } from '../support/scim.js';
import { pepReadsPeople } from '../support/pep.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
type Json = Record<string, any>;

/** A Decision (§5.5) as the box answers it: `decision`, and on a refusal a context with the reason. */
function expectDecision(answer: Json, decision: boolean): void {
  expect(answer.decision, JSON.stringify(answer)).to.equal(decision);
  if (decision) return void expect(answer, JSON.stringify(answer)).to.deep.equal({ decision: true });
  expect(Object.keys(answer).sort(), JSON.stringify(answer)).to.deep.equal(['context', 'decision']);
  expect(Object.keys(answer.context)).to.deep.equal(['reason']);
  expect(answer.context.reason).to.be.a('string').and.not.equal('');
}

/** The decision ids of an answer: its X-Boxauth-Decision header, one per evaluation answered (`-`: none). */
const decisionIds = (res: JsonResponse): string[] => (res.headers.get('x-boxauth-decision') ?? '').split(', ');

/** §7.2.1: an evaluation of a batch that could not be evaluated: false, and the error in its context. */
function expectEvaluationError(answer: Json, status: number, mentions: string): void {
  expect(answer, JSON.stringify(answer)).to.deep.equal({
    decision: false,
    context: { error: { status, message: answer.context?.error?.message } },
  });
  expect(answer.context.error.message).to.include(mentions);
}

/** A whole-request error (§10.1.2): the status, a JSON object whose error_description is the message. */
function expectRequestError(res: JsonResponse, status: number, mentions = ''): void {
  expect(res.status, res.text).to.equal(status);
  expect(res.headers.get('content-type')).to.match(/^application\/json/);
  expect(res.body.error_description).to.be.a('string').and.include(mentions);
}

describe('AuthZEN Authorization API 1.0', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  let alice: string; // the spec's "alice@example.com", by her user id
  let bob: string;
  let pep: string; // the PEP's token
  let pdp: string; // the PDP identifier of the app `library`

  boxForSuite((b, r) => ([box, root] = [b, r]));

  const token = async (client: string, secret: string, extra: Record<string, string> = {}): Promise<string> =>
    (await box.form('/auth/token', { grant_type: 'client_credentials', ...extra }, { Authorization: basic(client, secret) })).body
      .access_token;

  before(async function () {
    pdp = `${box.url}/apps/library`;
    const put = (path: string, body: Json): Promise<JsonResponse> => box.json('PUT', path, body, root);
    const readers = (await box.json('POST', '/groups', { name: 'readers' }, root)).body.id;
    alice = String(
      (await box.json('POST', '/users', { email: 'alice@example.com', password: 'alice-password-1', 'group-ids': [readers] }, root)).body
        .id,
    );
    bob = String((await box.json('POST', '/users', { email: 'bob@example.com', password: 'bob-password-1' }, root)).body.id);
    expect((await put('/App/library', { urls: ['https://library.example'] })).status).to.equal(201);
    // Readers read the documents but document 2 (§7.1.2's example answers true, false, true) …
    await put('/AccessPolicy/library-documents', {
      app: 'library',
      engine: 'matcho',
      link: [{ id: 'readers', resourceType: 'Group' }],
      matcho: { 'request-method': '#^(can_)?read$', path: '#^/document/[^2]' },
    });
    // … and accounts, at the time of §6.1.1's example: `context` reaches the policies as sent …
    await put('/AccessPolicy/library-accounts', {
      app: 'library',
      engine: 'matcho',
      link: [{ id: 'readers', resourceType: 'Group' }],
      matcho: { 'request-method': 'can_read', path: '#^/account/', context: { time: '#^1985-' } },
    });
    // … and extend the loan of a catalogued book (§5.2.2, §5.3.2): so does `resource`.
    await put('/AccessPolicy/library-loans', {
      app: 'library',
      engine: 'matcho',
      link: [{ id: 'readers', resourceType: 'Group' }],
      matcho: { 'request-method': 'extend-loan', resource: { type: 'book', properties: { library_record: { isbn: '#^978-' } } } },
    });
    // A service of the library's audience, named as a client or by its token.
    await box.addClient('indexer', { audience: ['https://library.example'] }, { secret: 'indexer-secret', policy: false });
    await put('/AccessPolicy/library-indexer', {
      app: 'library',
      engine: 'matcho',
      link: [{ id: 'indexer', resourceType: 'Client' }],
      matcho: { 'request-method': 'can_read', path: '#^/document/' },
    });
    // The PEP: a client whose token a policy of the box's own API lets ask about this app.
    const { secret } = await box.addClient('library-pep', {}, { policy: false });
    await put('/AccessPolicy/library-pep-asks', {
      engine: 'matcho',
      link: [{ id: 'library-pep', resourceType: 'Client' }],
      matcho: { 'request-method': 'post', uri: '#^/apps/library/access/v1/(evaluations?|search/(subject|resource|action))$' },
    });
    // It names people by their ids and addresses: it may read them on the box's API (the one rule of every named subject).
    await pepReadsPeople(box, root, 'library-pep');
    pep = await token('library-pep', secret);
  });

  const evaluation = (body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> =>
    box.json('POST', '/apps/library/access/v1/evaluation', body, pep, headers);
  const evaluations = (body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> =>
    box.json('POST', '/apps/library/access/v1/evaluations', body, pep, headers);
  const decisionsOf = (res: JsonResponse): boolean[] => (res.body.evaluations as Json[]).map((e) => e.decision as boolean);

  /** §6.1.1's example request, alice's. */
  const example = (): Json => ({
    subject: { type: 'user', id: alice },
    resource: { type: 'account', id: '123' },
    action: { name: 'can_read', properties: { method: 'GET' } },
    context: { time: '1985-10-26T01:22-07:00' },
  });

  describe('metadata (§9)', function () {
    it('is at the well-known URL of the PDP identifier, with exactly the registered parameters, which resolve', async function () {
      // §9.2: "inserting a well-known URI string between the host component and the path".
      const identifier = new URL(pdp);
      const wellKnown = `${identifier.origin}/.well-known/authzen-configuration${identifier.pathname}`;
      const res = await box.request('GET', wellKnown.slice(box.url.length));
      expect(res.status, res.text).to.equal(200);
      // §9.2.2: "MUST use the HTTP status code 200 and a Content-Type of application/json".
      expect(res.headers.get('content-type')).to.match(/^application\/json(;|$)/);
      expect(res.headers.get('cache-control')).to.match(/max-age=\d+/);
      // §9.1: no `issuer`: every endpoint the box has, at the spec's default paths.
      expect(res.body).to.deep.equal({
        policy_decision_point: pdp, // §9.2.3: identical to the identifier the well-known string went into
        access_evaluation_endpoint: `${pdp}/access/v1/evaluation`,
        access_evaluations_endpoint: `${pdp}/access/v1/evaluations`,
        search_subject_endpoint: `${pdp}/access/v1/search/subject`,
        search_resource_endpoint: `${pdp}/access/v1/search/resource`,
        search_action_endpoint: `${pdp}/access/v1/search/action`,
      });
      // The endpoints are where the metadata says (§10.1: "The request URL MUST be the value").
      for (const endpoint of [res.body.access_evaluation_endpoint, res.body.access_evaluations_endpoint] as string[]) {
        const asked = await box.json('POST', endpoint.slice(box.url.length), example(), pep);
        expect(asked.status, `${endpoint}: ${asked.text}`).to.equal(200);
        expectDecision(asked.body, true);
      }
      // Appended after the path (OpenID Connect's way) is not the spec's place; an unknown app has none.
      expect((await box.json('GET', '/apps/library/.well-known/authzen-configuration', undefined, root)).status).to.equal(404);
      expect((await box.request('GET', '/.well-known/authzen-configuration/apps/nosuchapp')).status).to.equal(404);
    });
  });

  describe('Access Evaluation (§6)', function () {
    it("answers §6.1.1's example with a Decision: true for alice, false with a reason for bob", async function () {
      const yes = await evaluation(example());
      expect(yes.status, yes.text).to.equal(200);
      expect(yes.headers.get('content-type')).to.match(/^application\/json(;|$)/);
      expectDecision(yes.body, true);

      const no = await evaluation({ ...example(), subject: { type: 'user', id: bob } });
      expect(no.status, no.text).to.equal(200); // §10.1.2: a deny is 200 with "decision": false, never an error status
      expectDecision(no.body, false);
      // The decision's id is in X-Boxauth-Decision, as at the gateways' doors: a refusal is explained by it.
      const [id] = decisionIds(no);
      expect(id).to.match(UUID);
      const explained = await eventually('the refused decision, kept', async () => {
        const res = await box.json('GET', `/authz/decisions/${id}`, undefined, root);
        return res.status === 200 && res;
      });
      expect(explained.body).to.deep.include({ id, app: 'library', allowed: false, reason: no.body.context.reason });
      expect(explained.body.request).to.deep.include({ 'request-method': 'can_read', path: '/account/123' });
      expect(explained.body.request.user.id).to.equal(bob);
    });

    it('passes context and resource to the policies as sent, and ignores fields it does not know (§10.1.1)', async function () {
      const { context: _context, ...withoutContext } = example();
      expectDecision((await evaluation(withoutContext)).body, false);
      expectDecision((await evaluation({ ...example(), context: { time: '2024-05-31T15:22-07:00' } })).body, false);

      // §5.2.2 and §5.3.2's examples: a book with its library record, a loan extended.
      const loan = {
        subject: { type: 'user', id: alice },
        resource: { type: 'book', id: '123', properties: { library_record: { title: 'AuthZEN in Action', isbn: '978-0593383322' } } },
        action: { name: 'extend-loan', properties: { period: '2W' } },
      };
      expectDecision((await evaluation(loan)).body, true);
      expectDecision((await evaluation({ ...loan, resource: { type: 'book', id: '123' } })).body, false);

      const unknown = await evaluation({ ...example(), foo: 'bar', futureField: { nested: true } });
      expect(unknown.status, unknown.text).to.equal(200);
      expectDecision(unknown.body, true);
    });

    it('names the subject as a user, a client or a token for the app; resource.properties.path is the path', async function () {
      const read = (subject: Json, resource: Json = { type: 'document', id: 'boxcarring.md' }) =>
        evaluation({ subject, action: { name: 'can_read' }, resource });
      expectDecision((await read({ type: 'client', id: 'indexer' })).body, true);
      expectDecision((await read({ type: 'client', id: 'library-pep' })).body, false);
      const forTheApp = await token('indexer', 'indexer-secret', { audience: 'https://library.example' });
      expectDecision((await read({ type: 'token', id: forTheApp })).body, true);
      expectDecision((await read({ type: 'token', id: pep })).body, false); // a token for the box's API, not the app
      const elsewhere = { type: 'page', id: 'x', properties: { path: '/document/1' } };
      expectDecision((await read({ type: 'client', id: 'indexer' }, elsewhere)).body, true);
      // A path whose meaning depends on who reads it cannot be evaluated: the request's error.
      const ambiguous = await read(
        { type: 'client', id: 'indexer' },
        { type: 'page', id: 'x', properties: { path: '/document/../admin' } },
      );
      expectRequestError(ambiguous, 400, 'dot segment');
    });
  });

  describe('Access Evaluations (§7)', function () {
    const doc = (id: string): Json => ({ resource: { type: 'document', id } });

    it("answers §7.1's example without defaults, one Decision per evaluation, in order, with no top-level decision", async function () {
      const full = (id: string): Json => ({
        subject: { type: 'user', id: alice },
        action: { name: 'can_read' },
        resource: { type: 'document', id },
        context: { time: '2024-05-31T15:22-07:00' },
      });
      const res = await evaluations({ evaluations: ['boxcarring.md', 'subject-search.md', 'resource-search.md'].map(full) });
      expect(res.status, res.text).to.equal(200);
      expect(Object.keys(res.body)).to.deep.equal(['evaluations']); // §7.2: the top-level decision RECOMMENDED omitted
      expect(res.body.evaluations).to.have.length(3);
      for (const answer of res.body.evaluations as Json[]) expectDecision(answer, true);
    });

    it("takes §7.1.1's defaults, each overridden whole by an evaluation that has the key", async function () {
      const res = await evaluations({
        subject: { type: 'user', id: alice },
        context: { time: '2024-05-31T15:22-07:00' },
        action: { name: 'can_read' },
        evaluations: [
          doc('boxcarring.md'),
          doc('subject-search.md'),
          { action: { name: 'can_edit' }, ...doc('resource-search.md') },
          // The subject overridden: bob is no reader.
          { subject: { type: 'user', id: bob }, ...doc('boxcarring.md') },
        ],
      });
      expect(res.status, res.text).to.equal(200);
      expect(decisionsOf(res)).to.deep.equal([true, true, false, false]);
      expectDecision(res.body.evaluations[2] as Json, false);

      // Context too: the default reaches every evaluation that has none, and one of its own replaces it,
      // whole: nothing of the default's is merged into it (the last has no time, so no account).
      const accounts = await evaluations({
        subject: { type: 'user', id: alice },
        action: { name: 'can_read' },
        resource: { type: 'account', id: '123' },
        context: { time: '1985-10-26T01:22-07:00' },
        evaluations: [
          {},
          { context: { time: '2024-05-31T15:22-07:00' } },
          { context: { time: '1985-10-27T00:00Z' } },
          { context: { place: 'reading room' } },
        ],
      });
      expect(decisionsOf(accounts)).to.deep.equal([true, false, true, false]);
    });

    it('runs every evaluation by default (execute_all), and stops as deny_on_first_deny and permit_on_first_permit say', async function () {
      // §7.1.2.1's example: read documents 1, 2 and 3.
      const ask = (semantic?: string, ids = ['1', '2', '3']): Promise<JsonResponse> =>
        evaluations({
          subject: { type: 'user', id: alice },
          action: { name: 'read' },
          ...(semantic ? { options: { evaluations_semantic: semantic, another_option: 'value' } } : {}),
          evaluations: ids.map(doc),
        });
      expect(decisionsOf(await ask())).to.deep.equal([true, false, true]);
      expect(decisionsOf(await ask('execute_all'))).to.deep.equal([true, false, true]);
      expect(decisionsOf(await ask('deny_on_first_deny'))).to.deep.equal([true, false]);
      expect(decisionsOf(await ask('deny_on_first_deny', ['1', '3']))).to.deep.equal([true, true]);
      expect(decisionsOf(await ask('permit_on_first_permit'))).to.deep.equal([true]);
      expect(decisionsOf(await ask('permit_on_first_permit', ['2', '3', '1']))).to.deep.equal([false, true]);
      expect(decisionsOf(await ask('permit_on_first_permit', ['2']))).to.deep.equal([false]);
    });

    it('answers an evaluation that cannot be evaluated in its own place (§7.2.1), the others decided', async function () {
      const batch = (semantic: string): Promise<JsonResponse> =>
        evaluations({
          action: { name: 'read' },
          options: { evaluations_semantic: semantic },
          evaluations: [
            { subject: { type: 'user', id: alice }, ...doc('1') },
            { subject: { type: 'user', id: alice } }, // no resource, and no default for it
            { subject: { type: 'group', id: 'readers' }, ...doc('1') }, // a type the box cannot name
            { subject: { type: 'user', id: alice }, resource: { type: 'page', id: 'x', properties: { path: '/a/../b' } } },
            { subject: { type: 'user', id: alice }, ...doc('3') },
          ],
        });
      const all = await batch('execute_all');
      expect(all.status, all.text).to.equal(200);
      expect(all.body.evaluations).to.have.length(5);
      expectDecision(all.body.evaluations[0] as Json, true);
      expectEvaluationError(all.body.evaluations[1] as Json, 400, 'evaluations[1].resource is required');
      expectEvaluationError(all.body.evaluations[2] as Json, 400, 'evaluations[2].subject.type must be one of user, client, token');
      expect(all.body.evaluations[3]).to.deep.include({ decision: false });
      expect(all.body.evaluations[3].context.error).to.deep.include({ status: 400 });
      expectDecision(all.body.evaluations[4] as Json, true);
      // §7.1.2: deny_on_first_deny stops at "any denial (error, or "decision": false)"; an error is no permit.
      expect(decisionsOf(await batch('deny_on_first_deny'))).to.deep.equal([true, false]);
      const permit = await evaluations({
        action: { name: 'read' },
        options: { evaluations_semantic: 'permit_on_first_permit' },
        evaluations: [{ subject: { type: 'user', id: alice } }, { subject: { type: 'user', id: alice }, ...doc('3') }],
      });
      expectEvaluationError(permit.body.evaluations[0] as Json, 400, 'resource is required');
      expect(decisionsOf(permit)).to.deep.equal([false, true]);
    });

    it('without evaluations, or with none, is an Access Evaluation: one Decision (§7.1)', async function () {
      for (const body of [example(), { ...example(), evaluations: [] }]) {
        const res = await evaluations(body);
        expect(res.status, res.text).to.equal(200);
        expectDecision(res.body, true);
      }
      expectRequestError(await evaluations({ evaluations: [] }), 400, 'subject is required');
    });
  });

  describe('subjects named as a PEP names them', function () {
    let carol: string;
    let dora: string;

    before(async function () {
      // carol comes from a directory (SCIM): her userName is her address, her externalId the directory's id.
      const scim = await provisioner(box, 'directory', { 'Content-Type': 'application/scim+json' });
      const made = await scim('POST', '/Users', { schemas: [USER], userName: 'carol@example.com', externalId: 'dir-carol' });
      expect(made.status, made.text).to.equal(201);
      // The box id (row id), not her SCIM id: SCIM names people by their public sub.
      carol = String(await restIdOf(box, root, 'carol@example.com'));
      // dora's directory id is bob's box id, and her upstream subject is carol's address: digits name box ids only,
      // and a name two people answer to names nobody.
      const dir = await scim('POST', '/Users', { schemas: [USER], userName: 'dora@example.com', externalId: bob });
      expect(dir.status, dir.text).to.equal(201);
      dora = String(await restIdOf(box, root, 'dora@example.com'));
      await box.json('PUT', '/IdentityProvider/corp', { type: 'oidc', oidc: { issuer: 'https://sso.corp.example', clientId: 'b' } }, root);
      await linkDummyIdentity(box.databaseUrl!, Number(dora), 'corp', 'carol@example.com');
      await linkDummyIdentity(box.databaseUrl!, Number(alice), 'corp', 'CiRmZDA2MTRk-alice');
    });

    /** Who the box read the subject `id` as: the user of the refused decision's record, which explain keeps. */
    const readAs = async (id: string): Promise<string> => {
      // The record keeps at most 5 refusals of one caller a second (api/decision/record.ts): start
      // a second of the box's clock (this machine's) afresh, so that earlier refusals cannot spend it.
      await new Promise((resolve) => setTimeout(resolve, 1005 - (Date.now() % 1000)));
      const res = await evaluation({ subject: { type: 'user', id }, action: { name: 'nothing' }, resource: { type: 'x', id: 'y' } });
      expect(res.status, res.text).to.equal(200);
      const kept = await eventually('the refusal, kept', async () => {
        const got = await box.json('GET', `/authz/decisions/${decisionIds(res)[0]!}`, undefined, root);
        return got.status === 200 && got;
      });
      return String(kept.body.request.user.id);
    };

    it('reads a user id as the box id, the sign-in name, the SCIM externalId or an upstream subject', async function () {
      expect(await readAs(alice)).to.equal(alice);
      expect(await readAs('alice@example.com')).to.equal(alice);
      expect(await readAs('ALICE@example.com')).to.equal(alice); // as sign-in compares addresses
      expect(await readAs('dir-carol')).to.equal(carol);
      expect(await readAs('CiRmZDA2MTRk-alice')).to.equal(alice);
      // Named so, a person is decided by the app's policies as by their id: alice reads, carol does not.
      const read = (id: string) => evaluation({ ...example(), subject: { type: 'user', id, properties: { role: 'admin' } } });
      expectDecision((await read('alice@example.com')).body, true);
      expectDecision((await read('CiRmZDA2MTRk-alice')).body, true);
      expectDecision((await read('dir-carol')).body, false);
    });

    it('reads digits as a box id only, and refuses a name two people answer to, or nobody', async function () {
      expect(await readAs(bob)).to.equal(bob); // dora's externalId is bob's id: digits are box ids
      const ambiguous = await evaluation({ ...example(), subject: { type: 'user', id: 'carol@example.com' } });
      expectDecision(ambiguous.body, false);
      expect(ambiguous.body.context.reason).to.equal('"carol@example.com" names more than one person: name them by their box id');
      const nobody = await evaluation({ ...example(), subject: { type: 'user', id: 'nobody@example.com' } });
      expect(nobody.body.context.reason).to.equal('no such user');
      expect((await evaluation({ ...example(), subject: { type: 'user', id: '9'.repeat(20) } })).body.context.reason).to.equal(
        'no such user',
      );
      expect(dora).to.be.a('string');
    });
  });

  describe('identical requests, identical answers (the certification profile, §2.6)', function () {
    it('answers identical bodies; the decision ids travel in X-Boxauth-Decision, in the order of the answers', async function () {
      const one = [await evaluation(example()), await evaluation(example())];
      expect(one[0]!.text).to.equal(one[1]!.text);
      expect(decisionIds(one[0]!)[0]).to.match(UUID).and.not.equal(decisionIds(one[1]!)[0]);

      const batch = {
        subject: { type: 'user', id: alice },
        action: { name: 'read' },
        evaluations: [{ resource: { type: 'document', id: '1' } }, { resource: { type: 'document', id: '2' } }, {}],
      };
      const many = [await evaluations(batch), await evaluations(batch)];
      expect(many[0]!.text).to.equal(many[1]!.text);
      expect(decisionsOf(many[0]!)).to.deep.equal([true, false, false]);
      const ids = decisionIds(many[0]!);
      expect(ids).to.have.length(3);
      expect(ids[0]).to.match(UUID);
      expect(ids[1]).to.match(UUID);
      expect(ids[2]).to.equal('-'); // no resource: an evaluation the box could not read, no decision
      // The refusal's id is the one explain knows.
      const explained = await eventually('the refused decision, kept', async () => {
        const res = await box.json('GET', `/authz/decisions/${ids[1]!}`, undefined, root);
        return res.status === 200 && res;
      });
      expect(explained.body.request.path).to.equal('/document/2');
    });
  });

  describe('search (§8)', function () {
    const search = (kind: string, body: unknown, as = pep): Promise<JsonResponse> =>
      box.json('POST', `/apps/library/access/v1/search/${kind}`, body, as);
    /** Every result of a search, page after page (limit `limit`), checking each page's shape (§8.3). */
    const everyPage = async (kind: string, body: Json, limit: number, as = pep): Promise<Json[]> => {
      const all: Json[] = [];
      let token: string | undefined;
      for (let n = 0; n < 50; n++) {
        const res = await search(kind, { ...body, page: { limit, ...(token ? { token } : {}) } }, as);
        expect(res.status, res.text).to.equal(200);
        expect(Object.keys(res.body)).to.deep.equal(['page', 'results']); // page first (§8.3: RECOMMENDED)
        expect(res.body.page.next_token).to.be.a('string');
        expect(res.body.results.length).to.be.at.most(limit);
        all.push(...(res.body.results as Json[]));
        token = res.body.page.next_token as string;
        if (!token) return all;
      }
      throw new Error('no last page');
    };

    before(async function () {
      // The App declares what its PDP knows: documents 1 to 5 (2 is the one readers may not read), a
      // book whose record the box knows, and the actions.
      const app = (await box.json('GET', '/App/library', undefined, root)).body as Json;
      const res = await box.json(
        'PUT',
        '/App/library',
        {
          urls: app.urls,
          resources: [
            ...['1', '2', '3', '4', '5'].map((id) => ({ type: 'document', id })),
            { type: 'book', id: 'catalogued', properties: { library_record: { isbn: '978-0593383322' } } },
          ],
          actions: ['can_read', 'read', 'can_edit', 'extend-loan'],
        },
        root,
      );
      expect(res.status, res.text).to.equal(200);
      // The PEP may read people on the box's API: Subject Search answers with them.
      await box.json(
        'PUT',
        '/AccessPolicy/library-pep-reads-people',
        { engine: 'matcho', link: [{ id: 'library-pep', resourceType: 'Client' }], matcho: { 'request-method': 'get', uri: '#^/users/' } },
        root,
      );
    });

    it('Resource Search: the declared resources of the type the subject may act on, page by page', async function () {
      const body = { subject: { type: 'user', id: alice }, action: { name: 'read' }, resource: { type: 'document' } };
      const want = ['1', '3', '4', '5'].map((id) => ({ type: 'document', id }));
      expect(await everyPage('resource', body, 100)).to.deep.equal(want);
      expect(await everyPage('resource', body, 2)).to.deep.equal(want);
      expect(await everyPage('resource', body, 1)).to.deep.equal(want);
      // An id sent is ignored; bob reads nothing; a type nothing is declared of has no results.
      expect(await everyPage('resource', { ...body, resource: { type: 'document', id: '2' } }, 10)).to.deep.equal(want);
      expect(await everyPage('resource', { ...body, subject: { type: 'user', id: bob } }, 10)).to.deep.equal([]);
      expect(await everyPage('resource', { ...body, resource: { type: 'spaceship' } }, 10)).to.deep.equal([]);
      // A declared resource's properties are the box's: evaluated by type and id alone, over what the PEP sends.
      const loan = { subject: { type: 'user', id: alice }, action: { name: 'extend-loan' }, resource: { type: 'book' } };
      expect(await everyPage('resource', loan, 10)).to.deep.equal([{ type: 'book', id: 'catalogued' }]);
      const sent = { library_record: { isbn: '000' } };
      expectDecision((await evaluation({ ...loan, resource: { type: 'book', id: 'catalogued', properties: sent } })).body, true);
    });

    it('Action Search: the declared actions the subject may take on the resource', async function () {
      const body = { subject: { type: 'user', id: alice }, resource: { type: 'document', id: '1' } };
      expect(await everyPage('action', body, 10)).to.deep.equal([{ name: 'can_read' }, { name: 'read' }]);
      expect(await everyPage('action', body, 1)).to.deep.equal([{ name: 'can_read' }, { name: 'read' }]);
      expect(await everyPage('action', { ...body, resource: { type: 'document', id: '2' } }, 10)).to.deep.equal([]);
      expect(await everyPage('action', { ...body, subject: { type: 'user', id: 'nonexistent-user' } }, 10)).to.deep.equal([]);
    });

    it('Subject Search: the people who may, named as the PEP names them back, page by page', async function () {
      const body = { subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'document', id: '1' } };
      // The readers: alice (named by her sign-in name) and the indexer is a client, not a user.
      expect(await everyPage('subject', body, 10)).to.deep.equal([{ type: 'user', id: 'alice@example.com' }]);
      expect(await everyPage('subject', body, 1)).to.deep.equal([{ type: 'user', id: 'alice@example.com' }]);
      // Another subject type has no candidates; identical searches, identical bodies.
      expect(await everyPage('subject', { ...body, subject: { type: 'spaceship' } }, 10)).to.deep.equal([]);
      const twice = [await search('subject', body), await search('subject', body)];
      expect(twice[0]!.text).to.equal(twice[1]!.text);
    });

    it('refuses malformed searches as a whole (400), and a token it never gave', async function () {
      const cases: [string, Json, string][] = [
        ['subject', { action: { name: 'read' }, resource: { type: 'document', id: '1' } }, 'subject is required'],
        ['subject', { subject: {}, action: { name: 'read' }, resource: { type: 'document', id: '1' } }, 'subject.type is required'],
        ['subject', { subject: { type: 'user' }, action: 'read', resource: { type: 'document', id: '1' } }, 'action is required'],
        ['subject', { subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'document' } }, 'resource.id is required'],
        ['resource', { subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'document' } }, 'subject.id is required'],
        ['resource', { subject: { type: 'user', id: alice }, action: {}, resource: { type: 'document' } }, 'action.name is required'],
        ['action', { subject: { type: 'user', id: alice }, resource: { type: 'document' } }, 'resource.id is required'],
        ['action', { subject: { type: 'user', id: alice }, resource: { type: 'd', id: '1' }, page: { limit: 0 } }, 'page.limit'],
        ['action', { subject: { type: 'user', id: alice }, resource: { type: 'd', id: '1' }, page: { token: 'bm9wZQ' } }, 'page.token'],
      ];
      for (const [kind, body, mentions] of cases) expectRequestError(await search(kind, body), 400, mentions);
    });

    it('never finds people the PEP may not read on the box API (enumeration)', async function () {
      // nosy-pep may ask the library's PDP, search included, but may not read people: whom it names is nobody to the policies …
      const { secret } = await box.addClient('nosy-pep', {}, { policy: false });
      await box.json(
        'PUT',
        '/AccessPolicy/nosy-pep-asks',
        {
          engine: 'matcho',
          link: [{ id: 'nosy-pep', resourceType: 'Client' }],
          matcho: { 'request-method': 'post', uri: '#^/apps/library/access/v1/' },
        },
        root,
      );
      const nosy = await token('nosy-pep', secret);
      const named = await box.json('POST', '/apps/library/access/v1/evaluation', example(), nosy);
      expect(named.body).to.deep.equal({ decision: false, context: { reason: 'no such user' } });
      // … and a Subject Search tells it nobody: who may read is not a way to list people.
      const body = { subject: { type: 'user' }, action: { name: 'read' }, resource: { type: 'document', id: '1' } };
      expect(await everyPage('subject', body, 10, nosy)).to.deep.equal([]);
      // Allowed to read one person, it finds that person only, when the app's policies allow them.
      const reader = String(
        (await box.json('POST', '/users', { email: 'erin@example.com', password: 'erin-password-1', 'group-ids': [] }, root)).body.id,
      );
      const readers = (await box.json('GET', '/groups?name=readers', undefined, root)).body as Json;
      const group = (Array.isArray(readers) ? readers : (readers.entry ?? readers.groups ?? [])) as Json[];
      expect(group).to.have.length(1);
      const g = group[0]!;
      await box.json('PUT', `/users/${reader}`, { email: 'erin@example.com', 'group-ids': [g.id] }, root);
      await box.json(
        'PUT',
        '/AccessPolicy/nosy-pep-reads-erin',
        {
          engine: 'matcho',
          link: [{ id: 'nosy-pep', resourceType: 'Client' }],
          matcho: { 'request-method': 'get', uri: `/users/${reader}` },
        },
        root,
      );
      expect(await everyPage('subject', body, 10, nosy)).to.deep.equal([{ type: 'user', id: 'erin@example.com' }]);
      expect(await everyPage('subject', body, 10)).to.deep.equal([
        { type: 'user', id: 'alice@example.com' },
        { type: 'user', id: 'erin@example.com' },
      ]);
    });
  });

  describe('errors of the whole request (§10.1.2) and the transport (§10.1, §11)', function () {
    it('is 400 for a body that is not an Access Evaluation(s) Request: not JSON, not an object, a field missing or of the wrong type', async function () {
      const raw = (path: string, body: string, type = 'application/json'): Promise<JsonResponse> =>
        box.request('POST', `/apps/library/access/v1/${path}`, {
          headers: { Authorization: `Bearer ${pep}`, 'Content-Type': type },
          body,
        });
      expectRequestError(await raw('evaluation', '{"subject": '), 400, 'malformed JSON');
      expectRequestError(await raw('evaluations', '{"subject": '), 400, 'malformed JSON');
      expectRequestError(await raw('evaluation', ''), 400);
      expectRequestError(await raw('evaluation', '[]'), 400);
      expectRequestError(await raw('evaluation', '"alice"'), 400);
      expectRequestError(await raw('evaluation', JSON.stringify(example()), 'text/plain'), 400, 'application/json');
      expectRequestError(await raw('evaluation', 'subject: {type: user}', 'application/yaml'), 400, 'application/json');

      const { subject: _s, ...noSubject } = example();
      const { action: _a, ...noAction } = example();
      const { resource: _r, ...noResource } = example();
      const cases: [Json, string][] = [
        [noSubject, 'subject is required'],
        [noAction, 'action is required'],
        [noResource, 'resource is required'],
        [{ ...example(), subject: 'alice' }, 'subject is required (an object)'],
        [{ ...example(), subject: { id: alice } }, 'subject.type is required'],
        [{ ...example(), subject: { type: 'user' } }, 'subject.id is required'],
        [{ ...example(), subject: { type: 'user', id: 7 } }, 'subject.id is required'],
        [{ ...example(), subject: { type: 'group', id: 'readers' } }, 'subject.type must be one of'],
        [{ ...example(), action: {} }, 'action.name is required'],
        [{ ...example(), action: { name: 42 } }, 'action.name is required'],
        [{ ...example(), resource: { id: '123' } }, 'resource.type is required'],
        [{ ...example(), resource: { type: 'account', id: '123', properties: 'x' } }, 'resource.properties must be an object'],
        [{ ...example(), context: 'now' }, 'context must be an object'],
      ];
      for (const [body, mentions] of cases) expectRequestError(await evaluation(body), 400, mentions);

      const batchCases: [Json, string][] = [
        [{ evaluations: {} }, 'evaluations must be an array'],
        [{ evaluations: ['x'] }, 'evaluations[0] must be an object'],
        [{ ...example(), evaluations: [{}], options: 'all' }, 'options must be an object'],
        [{ ...example(), evaluations: [{}], options: { evaluations_semantic: 'first' } }, 'evaluations_semantic must be one of'],
        [{ ...example(), subject: 'alice', evaluations: [{ subject: { type: 'user', id: alice } }] }, 'subject is required (an object)'],
        [{ ...example(), context: [], evaluations: [{}] }, 'context must be an object'],
        [{ ...example(), evaluations: Array.from({ length: 101 }, () => ({})) }, 'at most 100 evaluations'],
      ];
      for (const [body, mentions] of batchCases) expectRequestError(await evaluations(body), 400, mentions);
    });

    it('is 401 with WWW-Authenticate without a good token, 403 for a PEP no policy of the box allows', async function () {
      for (const path of ['evaluation', 'evaluations']) {
        const none = await box.json('POST', `/apps/library/access/v1/${path}`, example());
        expectRequestError(none, 401);
        expect(none.headers.get('www-authenticate')).to.match(/^Bearer realm=/); // §11.3
        const bad = await box.json('POST', `/apps/library/access/v1/${path}`, example(), 'not-a-token');
        expectRequestError(bad, 401);
        expect(bad.headers.get('www-authenticate')).to.include('error="invalid_token"');
      }
      const { secret } = await box.addClient('stranger-pep', {}, { policy: false });
      const stranger = await token('stranger-pep', secret);
      expectRequestError(await box.json('POST', '/apps/library/access/v1/evaluation', example(), stranger), 403);
      // library-pep asks about the library only.
      await box.json('PUT', '/App/archive', { urls: ['https://archive.example'] }, root);
      expectRequestError(await box.json('POST', '/apps/archive/access/v1/evaluation', example(), pep), 403);
    });

    it('echoes X-Request-ID on every answer: decisions, evaluations and errors (§10.1.3)', async function () {
      const id = { 'X-Request-ID': 'bfe9eb29-ab87-4ca3-be83-a1d5d8305716' };
      const answers = [
        await evaluation(example(), id),
        await evaluations({ ...example(), evaluations: [{}, {}] }, id),
        await evaluation({ subject: 'alice' }, id),
        await box.json('POST', '/apps/library/access/v1/evaluation', example(), undefined, id),
        await box.json('POST', '/apps/nosuchapp/access/v1/evaluation', example(), root, id),
        await box.request('GET', '/.well-known/authzen-configuration/apps/library', { headers: id }),
      ];
      expect(answers.map((r) => r.status)).to.deep.equal([200, 200, 400, 401, 404, 200]);
      for (const res of answers) expect(res.headers.get('x-request-id'), res.text).to.equal(id['X-Request-ID']);
      expect((await evaluation(example())).headers.get('x-request-id')).to.equal(null);
    });
  });
});
