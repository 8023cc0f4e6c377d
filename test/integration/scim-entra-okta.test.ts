// What Microsoft Entra ID and Okta send to a SCIM endpoint, replayed in the order their
// documentation shows it (bodies, methods, paths, query strings and headers copied from the
// pages cited above each sequence), against a real box at <box url>/scim/v2: what the directory
// reads back, and what the box's own REST API and sign-in then show (a deactivated person's
// browser, access token and refresh token end; reactivated, they sign in again).
// One provisioning client per directory: a client_credentials bearer token its AccessPolicy allows.
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { Box, basic, type JsonResponse } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import {
  ENTERPRISE,
  expectError,
  expectList,
  filter,
  GROUP,
  LIST,
  listed,
  patch,
  PATCH_OP,
  provisioner,
  restIdOf,
  USER,
  type Scim,
} from '../support/scim.js';
import { APP_REDIRECT, authorizePath, signedInAt, type SignedIn } from '../support/signed-in.js';

const APP_SECRET = 'app-secret-123';
/** A person's SCIM id on a new box: their opaque public sub. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('SCIM provisioning as Microsoft Entra ID and Okta document it', function () {
  let box: Box;
  let root: string;

  before(async function () {
    box = await Box.start();
    root = await box.rootToken();
    // The app people sign in to (their sessions are what deprovisioning must end).
    await box.addClient(
      'app',
      {
        grant_types: ['authorization_code'],
        first_party: true,
        auth: { authorization_code: { redirect_uri: APP_REDIRECT, refresh_token: true } },
      },
      { secret: APP_SECRET, policy: false },
    );
  });
  after(async function () {
    await box?.stop();
  });

  /** What an administrator of the box sees through its REST API. */
  const rest = (path: string): Promise<JsonResponse> => box.json('GET', path, undefined, root);

  /** The person signs in with a browser, and the app obtains a refresh token with it. */
  const signIn = (email: string, password: string): Promise<SignedIn> => signedInAt(box, email, password);
  const refresh = (refreshToken: string): Promise<JsonResponse> =>
    box.form('/auth/token', { grant_type: 'refresh_token', refresh_token: refreshToken }, { Authorization: basic('app', APP_SECRET) });
  const introspect = async (token: string): Promise<boolean> =>
    (await box.form('/auth/introspect', { token }, { Authorization: basic('app', APP_SECRET) })).body.active;
  /** Signed in: the authorization endpoint answers with a code rather than the sign-in page. */
  const stillSignedIn = async (browser: FormAgent): Promise<boolean> => (await browser.get(authorizePath())).status === 302;

  /** Everything a deprovisioned person held is refused, and their password no longer signs them in. */
  async function expectDeprovisioned(session: SignedIn, email: string, password: string): Promise<void> {
    const refreshed = await refresh(session.refreshToken);
    expect(refreshed.status, refreshed.text).to.equal(400);
    expect(refreshed.body.error).to.equal('invalid_grant');
    expect(await introspect(session.accessToken)).to.equal(false);
    expect(await stillSignedIn(session.browser)).to.equal(false);
    expect((await new FormAgent(box).signIn(email, password)).status).not.to.equal(303);
  }

  /** The REST API's ids of the people made here (their row ids), by their SCIM ids (their public subs: opaque on this box). */
  const restIds = new Map<string, number>();
  /** The SCIM id of the person a POST /Users made, their REST id found by their userName and kept. */
  const remember = async (created: JsonResponse): Promise<string> => {
    restIds.set(created.body.id, await restIdOf(box, root, created.body.userName));
    return created.body.id;
  };
  /** The person the directory knows by `id`, as an administrator sees them through the REST API. */
  const restPerson = (id: string): Promise<JsonResponse> => rest(`/users/${restIds.get(id)}`);
  /** The box's group ids a person is in, by the REST API. */
  const groupsOf = async (id: string): Promise<number[]> => (await restPerson(id)).body['group-ids'];

  // https://learn.microsoft.com/en-us/entra/identity/app-provisioning/use-scim-to-provision-users-and-groups
  //   ("SCIM protocol requests and responses": User Operations, Group Operations; "Integrate your SCIM
  //   endpoint": Test Connection; "Handling provisioning": Authorization: Bearer, Content-type: application/scim+json)
  // https://learn.microsoft.com/en-us/entra/identity/app-provisioning/application-provisioning-config-problem-scim-compatibility
  //   (what the sync engine sends without and with the aadOptscim062020 flag: "False" as a string,
  //   capitalised ops, urn-prefixed paths, value objects with dotted keys, members[value eq "..."])
  describe('Microsoft Entra ID', function () {
    let scim: Scim;
    const externalId = randomUUID();
    // Entra sends the userPrincipalName as userName: an email address here (the box's sign-in name).
    const userName = `Test_User_${randomUUID()}@testuser.com`;
    const workEmail = `Test_User_${randomUUID()}@testuser.com`;
    const renamed = `${randomUUID()}@testuser.com`;
    const password = 'an-entra-person-password';
    let id: string;
    let other: string;
    let session: SignedIn;
    let groupId: string;
    const groupName = `displayName-${randomUUID()}`;

    before(async function () {
      scim = await provisioner(box, 'entra-provisioning', { 'Content-Type': 'application/scim+json' });
    });

    it('Test Connection: a userName nobody has is 200 with an empty ListResponse', async function () {
      expectList(await scim('GET', `/Users?${filter(`userName eq "${randomUUID()}"`)}`), 0);
      // "Get User by query - Zero results", the documented request word for word.
      expectList(await scim('GET', `/Users?${filter('userName eq "non-existent user"')}`), 0);
    });

    it('Get User of an id nobody has: 404 with the error schema and status "404"', async function () {
      expectError(await scim('GET', '/Users/5171a35d82074e068ce2'), 404);
      expectError(await scim('GET', '/Users/999999999'), 404);
    });

    it('matching by externalId (mailNickname) before a create finds nobody', async function () {
      expectList(await scim('GET', `/Users?${filter(`externalId eq "${externalId}"`)}`), 0);
    });

    it('Create User with the documented body as it stands (a userName that is no address): 201, the sign-in name', async function () {
      const res = await scim('POST', '/Users', {
        schemas: [USER, ENTERPRISE],
        externalId: randomUUID(),
        userName: 'Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee',
        active: true,
        emails: [{ primary: true, type: 'work', value: 'Test_User_11bb11bb-cc22-dd33-ee44-55ff55ff55ff@testuser.com' }],
        meta: { resourceType: 'User' },
        name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
        roles: [],
      });
      expect(res.status, res.text).to.equal(201);
      expect(res.body.userName).to.equal('Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee');
      expect((await restPerson(await remember(res))).body.email).to.equal('Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee');
      // "Get User by query", the documented request word for word.
      const found = await scim('GET', `/Users?${filter('userName eq "Test_User_00aa00aa-bb11-cc22-dd33-44ee44ee44ee"')}`);
      expectList(found, 1);
      expect(listed(found)[0].id).to.equal(res.body.id);
    });

    it('Create User: 201 with the id (an opaque one), and the box has the person', async function () {
      const res = await scim('POST', '/Users', {
        schemas: [USER, ENTERPRISE],
        externalId,
        userName,
        active: true,
        emails: [{ primary: true, type: 'work', value: workEmail }],
        meta: { resourceType: 'User' },
        name: { formatted: 'givenName familyName', familyName: 'familyName', givenName: 'givenName' },
        roles: [],
      });
      expect(res.status, res.text).to.equal(201);
      expect(res.headers.get('content-type')).to.match(/^application\/scim\+json/);
      expect(res.body.id).to.be.a('string').and.match(UUID);
      expect(res.body).to.include({ externalId, userName, active: true });
      expect(res.body.name).to.include({ familyName: 'familyName', givenName: 'givenName' });
      expect(res.body.emails).to.deep.equal([{ primary: true, type: 'work', value: workEmail }]);
      expect(res.body.meta.resourceType).to.equal('User');
      expect(res.headers.get('location')).to.equal(`${box.url}/scim/v2/Users/${res.body.id}`);
      id = await remember(res);

      const person = await restPerson(id);
      expect(person.status, person.text).to.equal(200);
      expect(person.body).to.include({ email: userName, active: true });
    });

    it('"Provision a user" as the tutorial\'s example 2 sends it: nulls for what the directory has no value of', async function () {
      const jyoung = `jyoung-${randomUUID()}@testuser.com`;
      const res = await scim('POST', '/Users', {
        schemas: [USER, 'urn:ietf:params:scim:schemas:extension:enterprise:2.0User'],
        externalId: 'jyoung',
        userName: jyoung,
        active: true,
        addresses: null,
        displayName: 'Joy Young',
        emails: [{ type: 'work', value: 'jyoung@Contoso.com', primary: true }],
        meta: { resourceType: 'User' },
        name: { familyName: 'Young', givenName: 'Joy' },
        phoneNumbers: null,
        preferredLanguage: null,
        title: null,
        department: null,
        manager: null,
      });
      expect(res.status, res.text).to.equal(201);
      expect(res.body).to.include({ userName: jyoung, displayName: 'Joy Young', externalId: 'jyoung' });
      expect(res.body).not.to.have.any.keys('addresses', 'phoneNumbers', 'title');
      // "Values sent should be stored in the same format they were sent": the address's case too.
      expect(res.body.emails).to.deep.equal([{ type: 'work', value: 'jyoung@Contoso.com', primary: true }]);
      expectList(await scim('GET', `/Users?${filter('externalId eq "jyoung"')}`), 1);
    });

    it('Get User: 200, the same user', async function () {
      const res = await scim('GET', `/Users/${id}`);
      expect(res.status, res.text).to.equal(200);
      expect(res.body).to.include({ id, externalId, userName, active: true });
      expect(res.body.emails).to.deep.equal([{ primary: true, type: 'work', value: workEmail }]);
    });

    it('Get User by query: by userName, by externalId, by emails[type eq "work" and value eq ...]', async function () {
      for (const expression of [
        `userName eq "${userName}"`,
        `externalId eq "${externalId}"`,
        `emails[type eq "work" and value eq "${workEmail}"]`,
      ]) {
        const res = await scim('GET', `/Users?${filter(expression)}`);
        expectList(res, 1);
        expect(res.body.startIndex, expression).to.equal(1);
        expect(listed(res)[0]).to.include({ id, userName, externalId, active: true });
      }
    });

    // The tutorial: "if user uniqueness is evaluated for both userName and emails[type eq "work"], a GET
    // to /Users with a filter must allow for both userName eq ... and emails[type eq "work"].value eq ... queries".
    it('Get User by query: emails[type eq "work"].value eq ..., the form Entra sends for a matching on the work address', async function () {
      const res = await scim('GET', `/Users?${filter(`emails[type eq "work"].value eq "${workEmail}"`)}`);
      expectList(res, 1);
      expect(listed(res)[0]).to.include({ id, userName });
      expectList(await scim('GET', `/Users?${filter('emails[type eq "work"].value eq "nobody@testuser.com"')}`), 0);
    });

    it('Update User [Multi-valued properties]: Replace emails[type eq "work"].value and name.familyName', async function () {
      const res = await scim(
        'PATCH',
        `/Users/${id}`,
        patch(
          { op: 'Replace', path: 'emails[type eq "work"].value', value: 'updatedEmail@microsoft.com' },
          { op: 'Replace', path: 'name.familyName', value: 'updatedFamilyName' },
        ),
      );
      expect(res.status, res.text).to.equal(200);
      const read = await scim('GET', `/Users/${id}`);
      expect(read.body.name).to.include({ familyName: 'updatedFamilyName', givenName: 'givenName' });
      expect(read.body.emails).to.deep.equal([{ primary: true, type: 'work', value: 'updatedEmail@microsoft.com' }]);
      // The work address is an attribute; the sign-in name stays userName.
      expect((await restPerson(id)).body.email).to.equal(userName);
    });

    it('replacing several attributes (sync engine without the flag): displayName, names, externalId, employeeNumber by its urn path', async function () {
      const res = await scim(
        'PATCH',
        `/Users/${id}`,
        patch(
          { op: 'Replace', path: 'displayName', value: 'Pvlo' },
          { op: 'Replace', path: 'emails[type eq "work"].value', value: 'TestBcwqnm@test.microsoft.com' },
          { op: 'Replace', path: 'name.givenName', value: 'Gtfd' },
          { op: 'Replace', path: 'name.familyName', value: 'Pkqf' },
          { op: 'Replace', path: 'externalId', value: 'Eqpj' },
          { op: 'Replace', path: `${ENTERPRISE}:employeeNumber`, value: 'Eqpj' },
        ),
      );
      expect(res.status, res.text).to.equal(200);
      const read = await scim('GET', `/Users/${id}`);
      expect(read.body).to.include({ displayName: 'Pvlo', externalId: 'Eqpj', userName });
      expect(read.body.name).to.include({ givenName: 'Gtfd', familyName: 'Pkqf' });
      expect(read.body.emails).to.deep.equal([{ primary: true, type: 'work', value: 'TestBcwqnm@test.microsoft.com' }]);
      expect(read.body[ENTERPRISE]).to.include({ employeeNumber: 'Eqpj' });
      expectList(await scim('GET', `/Users?${filter('externalId eq "Eqpj"')}`), 1);
    });

    it('replacing several attributes (with the flag): one op without a path, its value keyed by dotted and urn paths', async function () {
      const res = await scim(
        'PATCH',
        `/Users/${id}`,
        patch(
          { op: 'replace', path: 'emails[type eq "work"].value', value: 'TestMhvaes@test.microsoft.com' },
          {
            op: 'replace',
            value: { displayName: 'Bjfe', 'name.givenName': 'Kkom', 'name.familyName': 'Unua', [`${ENTERPRISE}:employeeNumber`]: 'Aklq' },
          },
        ),
      );
      expect(res.status, res.text).to.equal(200);
      const read = await scim('GET', `/Users/${id}`);
      expect(read.body.displayName).to.equal('Bjfe');
      expect(read.body.name).to.include({ givenName: 'Kkom', familyName: 'Unua' });
      expect(read.body.emails).to.deep.equal([{ primary: true, type: 'work', value: 'TestMhvaes@test.microsoft.com' }]);
      expect(read.body[ENTERPRISE]).to.include({ employeeNumber: 'Aklq' });
      // No key of the value object became an attribute of its own.
      expect(read.body).not.to.have.any.keys('name.givenName', 'name.familyName', `${ENTERPRISE}:employeeNumber`);
    });

    it('adding a single-value string attribute: "Add" nickName', async function () {
      const res = await scim('PATCH', `/Users/${id}`, patch({ op: 'Add', path: 'nickName', value: 'Babs' }));
      expect(res.status, res.text).to.equal(200);
      expect((await scim('GET', `/Users/${id}`)).body.nickName).to.equal('Babs');
    });

    it('Update User [Single-valued properties]: Replace userName, a new address the person signs in with', async function () {
      const res = await scim('PATCH', `/Users/${id}`, patch({ op: 'Replace', path: 'userName', value: renamed }));
      expect(res.status, res.text).to.equal(200);
      expect((await scim('GET', `/Users/${id}`)).body.userName).to.equal(renamed);
      expectList(await scim('GET', `/Users?${filter(`userName eq "${userName}"`)}`), 0);
      expectList(await scim('GET', `/Users?${filter(`userName eq "${renamed}"`)}`), 1);
      expect((await restPerson(id)).body.email).to.equal(renamed);
    });

    it('the person signs in under the new name (Entra sends no password: an administrator of the box sets one)', async function () {
      const set = await box.json('PUT', `/users/${restIds.get(id)}`, { password }, root);
      expect(set.status, set.text).to.equal(200);
      session = await signIn(renamed, password);
      expect(await introspect(session.accessToken)).to.equal(true);
    });

    it('Disable User as the sync engine sends it without the flag ("Replace", "False"): every session of the person ends', async function () {
      const res = await scim('PATCH', `/Users/${id}`, patch({ op: 'Replace', path: 'active', value: 'False' }));
      expect(res.status, res.text).to.equal(200);
      expect((await scim('GET', `/Users/${id}`)).body.active).to.equal(false);
      // Soft-deleted users are still returned (the tutorial's requirements table).
      expectList(await scim('GET', `/Users?${filter(`userName eq "${renamed}"`)}`), 1);
      expect((await restPerson(id)).body.active).to.equal(false);
      await expectDeprovisioned(session, renamed, password);
    });

    it('enabling again ("Replace", "True"): the person signs in again; what they held before stays ended', async function () {
      const res = await scim('PATCH', `/Users/${id}`, patch({ op: 'Replace', path: 'active', value: 'True' }));
      expect(res.status, res.text).to.equal(200);
      expect((await scim('GET', `/Users/${id}`)).body.active).to.equal(true);
      expect((await restPerson(id)).body.active).to.equal(true);
      expect((await refresh(session.refreshToken)).status).to.equal(400);
      session = await signIn(renamed, password);
    });

    it('Disable User as documented in the tutorial and with the flag (active: false, a boolean)', async function () {
      const res = await scim('PATCH', `/Users/${id}`, {
        Operations: [{ op: 'Replace', path: 'active', value: false }],
        schemas: [PATCH_OP],
      });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.active).to.equal(false);
      await expectDeprovisioned(session, renamed, password);
      const enabled = await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', path: 'active', value: true }));
      expect(enabled.status, enabled.text).to.equal(200);
      await signIn(renamed, password);
    });

    it('Create Group (with the Microsoft schema URI beside the core one): 201', async function () {
      const res = await scim('POST', '/Groups', {
        schemas: [GROUP, 'http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group'],
        externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159',
        displayName: groupName,
        meta: { resourceType: 'Group' },
      });
      expect(res.status, res.text).to.equal(201);
      expect(res.body.id).to.be.a('string').and.match(/^\d+$/);
      expect(res.body).to.include({ displayName: groupName, externalId: '8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159' });
      expect(res.body.members ?? []).to.deep.equal([]);
      groupId = res.body.id;
      const group = await rest(`/groups/${groupId}`);
      expect(group.status, group.text).to.equal(200);
      expect(group.body.name).to.equal(groupName);
    });

    it('Get Group and Get Group by displayName, excluding members', async function () {
      const one = await scim('GET', `/Groups/${groupId}?excludedAttributes=members`);
      expect(one.status, one.text).to.equal(200);
      expect(one.body).to.include({ id: groupId, displayName: groupName });
      expect(one.body).not.to.have.property('members');
      const found = await scim('GET', `/Groups?excludedAttributes=members&${filter(`displayName eq "${groupName}"`)}`);
      expectList(found, 1);
      expect(listed(found)[0]).to.include({ id: groupId, displayName: groupName });
      expect(listed(found)[0]).not.to.have.property('members');
      expectList(await scim('GET', `/Groups?excludedAttributes=members&${filter('displayName eq "no such group"')}`), 0);
    });

    it('Update Group [Add Members] ("$ref": null): 204, and the REST API shows the membership', async function () {
      const created = await scim('POST', '/Users', {
        schemas: [USER, ENTERPRISE],
        externalId: randomUUID(),
        userName: `${randomUUID()}@testuser.com`,
        active: true,
        meta: { resourceType: 'User' },
        roles: [],
      });
      expect(created.status, created.text).to.equal(201);
      other = await remember(created);
      for (const member of [id, other]) {
        const res = await scim(
          'PATCH',
          `/Groups/${groupId}`,
          patch({ op: 'Add', path: 'members', value: [{ $ref: null, value: member }] }),
        );
        expect(res.status, res.text).to.be.oneOf([200, 204]);
      }
      expect(await groupsOf(id)).to.deep.equal([Number(groupId)]);
      expect(await groupsOf(other)).to.deep.equal([Number(groupId)]);
      const read = await scim('GET', `/Groups/${groupId}`);
      expect(read.body.members.map((m: { value: string }) => m.value).sort()).to.deep.equal([id, other].sort());
      expect((await scim('GET', `/Users/${id}`)).body.groups.map((g: { value: string }) => g.value)).to.deep.equal([groupId]);
    });

    it('Update Group [Remove Members]: by a value list (without the flag) and by members[value eq "<id>"] (with it)', async function () {
      const byList = await scim(
        'PATCH',
        `/Groups/${groupId}`,
        patch({ op: 'Remove', path: 'members', value: [{ $ref: null, value: other }] }),
      );
      expect(byList.status, byList.text).to.be.oneOf([200, 204]);
      expect(await groupsOf(other)).to.deep.equal([]);
      expect(await groupsOf(id)).to.deep.equal([Number(groupId)]);
      const byFilter = await scim('PATCH', `/Groups/${groupId}`, patch({ op: 'remove', path: `members[value eq "${id}"]` }));
      expect(byFilter.status, byFilter.text).to.be.oneOf([200, 204]);
      expect(await groupsOf(id)).to.deep.equal([]);
      expect((await scim('GET', `/Groups/${groupId}`)).body.members ?? []).to.deep.equal([]);
    });

    it('Update Group [Non-member attributes]: Replace displayName, and the box has the new name', async function () {
      const newName = `${randomUUID()}updatedDisplayName`;
      const res = await scim('PATCH', `/Groups/${groupId}`, patch({ op: 'Replace', path: 'displayName', value: newName }));
      expect(res.status, res.text).to.be.oneOf([200, 204]);
      expect((await rest(`/groups/${groupId}`)).body.name).to.equal(newName);
      expectList(await scim('GET', `/Groups?excludedAttributes=members&${filter(`displayName eq "${newName}"`)}`), 1);
      expectList(await scim('GET', `/Groups?excludedAttributes=members&${filter(`displayName eq "${groupName}"`)}`), 0);
    });

    it('Delete Group: 204, gone from SCIM and from the box', async function () {
      const res = await scim('DELETE', `/Groups/${groupId}`);
      expect(res.status, res.text).to.equal(204);
      expectError(await scim('GET', `/Groups/${groupId}`), 404);
      expect((await rest(`/groups/${groupId}`)).status).to.equal(404);
    });

    it('Delete User: 204, gone from SCIM and from the box, and signed out', async function () {
      const signedIn = await signIn(renamed, password);
      const res = await scim('DELETE', `/Users/${id}`);
      expect(res.status, res.text).to.equal(204);
      expectError(await scim('GET', `/Users/${id}`), 404);
      expect((await restPerson(id)).status).to.equal(404);
      expectList(await scim('GET', `/Users?${filter(`userName eq "${renamed}"`)}`), 0);
      expect(await introspect(signedIn.accessToken)).to.equal(false);
      expect((await refresh(signedIn.refreshToken)).status).to.equal(400);
    });
  });

  // https://developer.okta.com/docs/api/openapi/okta-scim/guides/scim-20 (the SCIM 2.0 Protocol
  //   Reference: create, retrieve, update with PUT, deactivate with PATCH, Group Push, membership, delete)
  // The headers: "User-Agent: Okta SCIM Client 1.0.0" (that reference); Content-Type and Accept as
  //   Okta's SCIM 2.0 Runscope test sends them (https://github.com/oktadev/okta-scim-beta, SCIM_tests_for_Runscope.json).
  describe('Okta', function () {
    let scim: Scim;
    const userName = `test.user.${randomUUID()}@okta.local`;
    const renamed = `another.user.${randomUUID()}@okta.local`;
    const password = '1mz050nq';
    const externalId = '00ujl29u0le5T6Aj10h7';
    let id: string;
    let other: string;
    let session: SignedIn;
    let groupId: string;

    before(async function () {
      scim = await provisioner(box, 'okta-provisioning', {
        'User-Agent': 'Okta SCIM Client 1.0.0',
        'Content-Type': 'application/scim+json; charset=utf-8',
        Accept: 'application/scim+json',
        'Accept-Charset': 'utf-8',
      });
    });

    it('checks the credentials and the pagination: GET /Users?startIndex=1&count=2', async function () {
      const res = await scim('GET', '/Users?startIndex=1&count=2');
      expect(res.status, res.text).to.equal(200);
      expect(res.body.schemas).to.deep.equal([LIST]);
      for (const key of ['totalResults', 'startIndex', 'itemsPerPage']) expect(res.body[key], key).to.be.a('number');
      expect(res.body.startIndex).to.equal(1);
      expect(listed(res).length).to.be.at.most(2);
    });

    it('Determine if the User already exists: an empty ListResponse', async function () {
      expectList(await scim('GET', `/Users?${filter(`userName eq "${userName}"`)}&startIndex=1&count=100`), 0);
    });

    it('Create the User (with a password): 201, and the box has the person', async function () {
      const res = await scim('POST', '/Users', {
        schemas: [USER],
        userName,
        name: { givenName: 'Test', familyName: 'User' },
        emails: [{ primary: true, value: userName, type: 'work' }],
        displayName: 'Test User',
        locale: 'en-US',
        externalId,
        groups: [],
        password,
        active: true,
      });
      expect(res.status, res.text).to.equal(201);
      expect(res.body.id).to.be.a('string').and.match(UUID);
      expect(res.body).to.include({ userName, displayName: 'Test User', locale: 'en-US', externalId, active: true });
      expect(res.body.name).to.include({ givenName: 'Test', familyName: 'User' });
      expect(res.body).not.to.have.property('password');
      id = await remember(res);
      expect((await restPerson(id)).body).to.include({ email: userName, active: true });
    });

    it('a second create of the same userName: 409 with the error schema (stops the provisioning job)', async function () {
      const res = await scim('POST', '/Users', {
        schemas: [USER],
        userName,
        name: { givenName: 'Test', familyName: 'User' },
        emails: [{ primary: true, value: userName, type: 'work' }],
        active: true,
      });
      expectError(res, 409, 'uniqueness');
    });

    it('the person signs in with the password Okta set', async function () {
      session = await signIn(userName, password);
      expect(await introspect(session.accessToken)).to.equal(true);
    });

    it('Retrieve Users (startIndex=1&count=100, integers) and a specific User; 404 for one nobody has', async function () {
      const all = await scim('GET', '/Users?startIndex=1&count=100');
      expect(all.status, all.text).to.equal(200);
      expect(all.body.startIndex).to.equal(1);
      expect(all.body.totalResults).to.be.a('number');
      expect(listed(all).map((u) => u.id)).to.include(id);
      const one = await scim('GET', `/Users/${id}`);
      expect(one.status, one.text).to.equal(200);
      expect(one.body).to.include({ id, userName, active: true });
      expect(one.body.groups ?? []).to.deep.equal([]);
      expectError(await scim('GET', '/Users/23a35c27-23d3-4c03-b4c5-6443c09e7173'), 404);
    });

    /** The whole User as Okta PUTs it: what it read, with its changes (id, groups and meta included). */
    const wholeUser = (name: string, active: boolean): unknown => ({
      schemas: [USER],
      id,
      userName: name,
      name: { givenName: 'Another', middleName: 'Excited', familyName: 'User' },
      emails: [{ primary: true, value: name, type: 'work', display: name }],
      active,
      groups: [],
      meta: { resourceType: 'User' },
    });

    it('Update a specific User (PUT) with the whole object: id, groups and meta in it; the password stays', async function () {
      const res = await scim('PUT', `/Users/${id}`, wholeUser(userName, true));
      expect(res.status, res.text).to.equal(200);
      expect(res.body.name).to.include({ givenName: 'Another', middleName: 'Excited', familyName: 'User' });
      expect(res.body).to.include({ id, userName, active: true });
      // A PUT without the password (Okta syncs passwords on their own) leaves it, and the session.
      expect((await refresh(session.refreshToken)).status).to.equal(200);
      await signIn(userName, password);
    });

    it('a PUT with a new userName renames the person: the box and sign-in use the new address', async function () {
      const res = await scim('PUT', `/Users/${id}`, wholeUser(renamed, true));
      expect(res.status, res.text).to.equal(200);
      expect(res.body.userName).to.equal(renamed);
      expect((await restPerson(id)).body.email).to.equal(renamed);
      expectList(await scim('GET', `/Users?${filter(`userName eq "${renamed}"`)}&startIndex=1&count=100`), 1);
      expectList(await scim('GET', `/Users?${filter(`userName eq "${userName}"`)}&startIndex=1&count=100`), 0);
      session = await signIn(renamed, password);
    });

    it('deactivate: PATCH replace with a value object {"active": false}; every session of the person ends', async function () {
      const res = await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', value: { active: false } }));
      expect(res.status, res.text).to.be.oneOf([200, 204]);
      if (res.status === 200) expect(res.body).to.include({ id, userName: renamed, active: false });
      expect((await scim('GET', `/Users/${id}`)).body.active).to.equal(false);
      expect((await restPerson(id)).body.active).to.equal(false);
      await expectDeprovisioned(session, renamed, password);
    });

    it('reactivate: PATCH replace {"active": true}; the person signs in again', async function () {
      const res = await scim('PATCH', `/Users/${id}`, patch({ op: 'replace', value: { active: true } }));
      expect(res.status, res.text).to.be.oneOf([200, 204]);
      expect((await scim('GET', `/Users/${id}`)).body.active).to.equal(true);
      expect((await restPerson(id)).body.active).to.equal(true);
      expect((await refresh(session.refreshToken)).status).to.equal(400);
      session = await signIn(renamed, password);
      expect(await introspect(session.accessToken)).to.equal(true);
    });

    // Integrations made with the App Integration Wizard deactivate and reactivate with a PUT instead.
    it('deactivate and reactivate as an App Integration Wizard integration: PUT of the whole User with active false, then true', async function () {
      const off = await scim('PUT', `/Users/${id}`, wholeUser(renamed, false));
      expect(off.status, off.text).to.equal(200);
      expect(off.body.active).to.equal(false);
      expect((await restPerson(id)).body.active).to.equal(false);
      await expectDeprovisioned(session, renamed, password);
      const on = await scim('PUT', `/Users/${id}`, wholeUser(renamed, true));
      expect(on.status, on.text).to.equal(200);
      expect(on.body.active).to.equal(true);
      session = await signIn(renamed, password);
    });

    it('Group Push: POST /Groups with no members; it is listed with startIndex=1&count=100', async function () {
      const res = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Test SCIMv2', members: [] });
      expect(res.status, res.text).to.equal(201);
      expect(res.body).to.include({ displayName: 'Test SCIMv2' });
      expect(res.body.members ?? []).to.deep.equal([]);
      groupId = res.body.id;
      expect((await rest(`/groups/${groupId}`)).body.name).to.equal('Test SCIMv2');
      const all = await scim('GET', '/Groups?startIndex=1&count=100');
      expect(all.status, all.text).to.equal(200);
      expect(listed(all).map((g) => g.id)).to.include(groupId);
      const one = await scim('GET', `/Groups/${groupId}`);
      expect(one.status, one.text).to.equal(200);
      expect(one.body).to.include({ id: groupId, displayName: 'Test SCIMv2' });
    });

    it('a full push of the membership: replace members with two people', async function () {
      const created = await scim('POST', '/Users', {
        schemas: [USER],
        userName: `second.${randomUUID()}@okta.local`,
        name: { givenName: 'Second', familyName: 'User' },
        active: true,
      });
      expect(created.status, created.text).to.equal(201);
      other = await remember(created);
      const res = await scim(
        'PATCH',
        `/Groups/${groupId}`,
        patch({
          op: 'replace',
          path: 'members',
          value: [
            { value: id, display: renamed },
            { value: other, display: renamed },
          ],
        }),
      );
      expect(res.status, res.text).to.be.oneOf([200, 204]);
      expect(await groupsOf(id)).to.deep.equal([Number(groupId)]);
      expect(await groupsOf(other)).to.deep.equal([Number(groupId)]);
    });

    it('a membership update: remove members[value eq "<id>"] and add one in the same PATCH', async function () {
      const res = await scim(
        'PATCH',
        `/Groups/${groupId}`,
        patch(
          { op: 'remove', path: `members[value eq "${other}"]` },
          { op: 'add', path: 'members', value: [{ value: id, display: renamed }] },
        ),
      );
      expect(res.status, res.text).to.be.oneOf([200, 204]);
      expect(await groupsOf(other)).to.deep.equal([]);
      expect(await groupsOf(id)).to.deep.equal([Number(groupId)]);
      const read = await scim('GET', `/Groups/${groupId}`);
      expect(read.body.members.map((m: { value: string }) => m.value)).to.deep.equal([id]);
    });

    it('Update a specific Group name: replace with a value object carrying id and displayName', async function () {
      const res = await scim('PATCH', `/Groups/${groupId}`, patch({ op: 'replace', value: { id: groupId, displayName: 'Test SCIMv20' } }));
      expect(res.status, res.text).to.be.oneOf([200, 204]);
      if (res.status === 200) expect(res.body).to.include({ id: groupId, displayName: 'Test SCIMv20' });
      expect((await rest(`/groups/${groupId}`)).body.name).to.equal('Test SCIMv20');
      expect((await restPerson(id)).body.groups).to.deep.equal([{ id: Number(groupId), name: 'Test SCIMv20' }]);
      // The rename leaves the membership.
      expect((await scim('GET', `/Groups/${groupId}`)).body.members.map((m: { value: string }) => m.value)).to.deep.equal([id]);
    });

    it('Delete a specific Group (unlink pushed group, delete in the app): 204; the person keeps their account', async function () {
      const res = await scim('DELETE', `/Groups/${groupId}`);
      expect(res.status, res.text).to.equal(204);
      expect((await rest(`/groups/${groupId}`)).status).to.equal(404);
      expect(await groupsOf(id)).to.deep.equal([]);
      expect(await introspect(session.accessToken)).to.equal(true);
    });
  });
});
