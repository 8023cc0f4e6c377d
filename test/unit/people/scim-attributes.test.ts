// What a directory writes, as the box reads it (readUser, readGroup), and what it reads back: the
// resources with their versions, and the attributes/excludedAttributes projection (RFC 7644 §3.4.2.5).
import { expect } from 'chai';
import { project, readResource, versionOf } from '../../../api/people/scim/attributes.js';
import { groupResource, readGroup, readUser, userResource } from '../../../api/people/scim/resources.js';
import { ScimError } from '../../../api/people/scim/errors.js';
import { CORE_GROUP, CORE_USER, ENTERPRISE_USER, RESOURCE_TYPES } from '../../../api/people/scim/schemas.js';
import type { Json } from '../../../api/people/scim/patch.js';
import type { UserRow } from '../../../api/store/users.js';
import type { GroupRow } from '../../../api/store/groups.js';
import type { SubjectSettings } from '../../../api/credentials/subjects.js';

const User = RESOURCE_TYPES.User;
const BASE = 'https://box.example/scim/v2';
const key = Buffer.alloc(32, 7);
/** A box of opaque public subs (every box made since migration 036), and one that kept its row ids. */
const OPAQUE: SubjectSettings = { publicSubjects: 'opaque', key };
const SEQUENTIAL: SubjectSettings = { publicSubjects: 'sequential', key };

function refusal(f: () => unknown): [number, string | undefined, string] {
  try {
    f();
  } catch (err) {
    expect(err).to.be.instanceOf(ScimError);
    return [(err as ScimError).status, (err as ScimError).scimType, (err as ScimError).message];
  }
  throw new Error('not refused');
}

const invalidValue = (f: () => unknown, detail: RegExp): void => {
  const [status, scimType, message] = refusal(f);
  expect([status, scimType]).to.deep.equal([400, 'invalidValue']);
  expect(message).to.match(detail);
};

describe('SCIM: a User as a directory writes it', () => {
  it('takes an email address, or a name without "@", as userName; refuses a broken address and spaces', () => {
    expect(readUser({ userName: 'ann@example.com' }).userName).to.equal('ann@example.com');
    expect(readUser({ username: '  Ann@Example.com ' }).userName).to.equal('Ann@Example.com');
    expect(readUser({ userName: 'ann.smith' }).userName).to.equal('ann.smith');
    for (const broken of ['ann@', '@example.com', 'ann@@example.com', 'a@b@c'])
      invalidValue(() => readUser({ userName: broken }), /not a valid email address/);
    invalidValue(() => readUser({ userName: 'ann smith' }), /spaces/);
    invalidValue(() => readUser({}), /userName is required/);
    invalidValue(() => readUser({ userName: '  ' }), /non-empty string/);
    invalidValue(() => readUser({ userName: 7 }), /non-empty string/);
    invalidValue(() => readUser({ userName: `${'a'.repeat(250)}@b.cd` }), /at most 254/);
    invalidValue(() => readUser({ userName: 'ann\u200b@example.com' }), /invisible/);
    invalidValue(() => readUser('ann'), /User object/);
  });

  it('reads active as a boolean, Entra ID\'s "True"/"False" strings included; true when absent', () => {
    expect(readUser({ userName: 'a', active: 'False' }).active).to.equal(false);
    expect(readUser({ userName: 'a', active: 'TRUE' }).active).to.equal(true);
    expect(readUser({ userName: 'a', active: false }).active).to.equal(false);
    expect(readUser({ userName: 'a' }).active).to.equal(true);
    expect(readUser({ userName: 'a', active: null }).active).to.equal(true);
    for (const active of ['yes', 1, 0, {}]) invalidValue(() => readUser({ userName: 'a', active }), /true or false/);
  });

  it("takes a password as a string, and keeps it out of the kept attributes (the box's rule is applied where it is written)", () => {
    expect(readUser({ userName: 'a', password: 'k7#pQ2vL' })).to.deep.include({ password: 'k7#pQ2vL', kept: {} });
    expect(readUser({ userName: 'a', password: 'x'.repeat(1024) }).password).to.have.length(1024);
    expect(readUser({ userName: 'a' })).not.to.have.property('password');
    for (const password of [12345678, true, ['k7#pQ2vL'], { value: 'k7#pQ2vL' }])
      invalidValue(() => readUser({ userName: 'a', password }), /password must be a string/);
  });

  it('keeps the attributes the schemas define, in their spelling; drops unknown and read-only ones', () => {
    const written = readUser({
      schemas: [CORE_USER, ENTERPRISE_USER],
      id: '99',
      externalId: 'ext-1',
      userName: 'ann@example.com',
      NAME: { GivenName: 'Ann', nickname: 'not a name part' },
      displayname: 'Ann',
      emails: [{ Value: 'ann@example.com', type: 'work', primary: 'True' }, null],
      groups: [{ value: '1' }],
      meta: { version: 'W/"x"' },
      favouriteColour: 'green',
      title: null,
      [ENTERPRISE_USER.toUpperCase()]: { department: 'Sales', manager: { value: '9', displayName: 'read-only' }, shoeSize: '9' },
    });
    expect(written).to.deep.equal({
      userName: 'ann@example.com',
      externalId: 'ext-1',
      active: true,
      kept: {
        name: { givenName: 'Ann' },
        displayName: 'Ann',
        emails: [{ value: 'ann@example.com', type: 'work', primary: true }],
        [ENTERPRISE_USER]: { department: 'Sales', manager: { value: '9' } },
      },
    });
  });

  it('refuses values of the wrong type or size', () => {
    invalidValue(() => readUser({ userName: 'a', displayName: 5 }), /displayName is a string/);
    invalidValue(() => readUser({ userName: 'a', name: 'Ann' }), /name is an object/);
    invalidValue(() => readUser({ userName: 'a', emails: [{ value: 5 }] }), /emails\[0\]\.value is a string/);
    invalidValue(() => readUser({ userName: 'a', emails: [{ primary: 'maybe' }] }), /emails\[0\]\.primary is true or false/);
    invalidValue(() => readUser({ userName: 'a', title: 'x'.repeat(2049) }), /longer than 2048/);
    invalidValue(() => readUser({ userName: 'a', emails: Array.from({ length: 101 }, () => ({ value: 'x' })) }), /more than 100/);
    invalidValue(() => readUser({ userName: 'a', [ENTERPRISE_USER]: 'Sales' }), /object of its attributes/);
    invalidValue(() => readUser({ userName: 'a', externalId: 'x'.repeat(257) }), /externalId must be at most 256/);
  });

  it("reads Entra ID's manager given as an id alone as the manager's value", () => {
    const user = readUser({ userName: 'ann@example.com', [ENTERPRISE_USER]: { manager: '42' } });
    expect(user.kept[ENTERPRISE_USER]).to.deep.equal({ manager: { value: '42' } });
  });

  it('reads one element given for a multi-valued attribute as a list of one', () => {
    expect(readResource(User, { emails: { value: 'a@b.c' } })).to.deep.equal({ emails: [{ value: 'a@b.c' }] });
  });
});

describe('SCIM: a Group as a directory writes it', () => {
  it('reads displayName, externalId and members by person id (as written: whom they name is looked up later), each once', () => {
    expect(
      readGroup({
        displayName: ' Tour Guides ',
        externalId: 'g-1',
        Members: [{ value: '7', type: 'User', display: 'Ann' }, { VALUE: '0d4c7a52-5b0e-4c1f-9f51-3a4f0e9e2b11' }, { value: '7' }],
        meta: { version: 'x' },
      }),
    ).to.deep.equal({ displayName: 'Tour Guides', externalId: 'g-1', members: ['7', '0d4c7a52-5b0e-4c1f-9f51-3a4f0e9e2b11'] });
    expect(readGroup({ displayName: 'g', members: null })).to.deep.equal({ displayName: 'g', externalId: null, members: [] });
  });

  it('refuses nested groups, member ids that cannot be a person of this box, and a group without a name', () => {
    invalidValue(() => readGroup({ displayName: 'g', members: [{ value: '7', type: 'Group' }] }), /no nested groups/);
    for (const value of ['', 7, 'x'.repeat(65), undefined])
      invalidValue(() => readGroup({ displayName: 'g', members: [{ value }] }), /members\[0\]\.value must be the id of a person/);
    invalidValue(() => readGroup({ displayName: 'g', members: ['7'] }), /members\[0\]\.value/);
    invalidValue(() => readGroup({ displayName: 'g', members: { value: '7' } }), /must be a list/);
    invalidValue(() => readGroup({ members: [] }), /displayName is required/);
    invalidValue(() => readGroup({ displayName: 'x'.repeat(201) }), /at most 200/);
  });
});

const row = (change: Partial<UserRow> = {}): UserRow => ({
  id: 7,
  subject: '0d4c7a52-5b0e-4c1f-9f51-3a4f0e9e2b11',
  email: 'ann@example.com',
  passwordHash: 'hash',
  data: null,
  status: null,
  emailVerified: true,
  mustVerifyEmail: false,
  passwordSet: true,
  active: true,
  externalId: 'ext-7',
  scim: { name: { givenName: 'Ann', familyName: 'Smith' }, emails: [{ value: 'ann@example.com', type: 'work' }] },
  groups: [{ id: 11, name: 'guides' }],
  createdAt: new Date('2026-11-01T00:00:00Z'),
  updatedAt: new Date('2026-11-02T00:00:00Z'),
  ...change,
});

const groupRow = (change: Partial<GroupRow> = {}): GroupRow => ({
  id: 11,
  name: 'guides',
  description: null,
  requireSecondFactor: false,
  externalId: null,
  createdAt: new Date('2026-11-01T00:00:00Z'),
  updatedAt: new Date('2026-11-02T00:00:00Z'),
  ...change,
});

describe('SCIM: resources as the box shows them', () => {
  it('shows a person with their kept attributes, read-only groups and meta', () => {
    const resource = userResource(row({ scim: { ...row().scim, [ENTERPRISE_USER]: { department: 'Sales' } } }), BASE, OPAQUE);
    const { meta, ...rest } = resource as { meta: Json };
    expect(rest).to.deep.equal({
      schemas: [CORE_USER, ENTERPRISE_USER],
      id: '0d4c7a52-5b0e-4c1f-9f51-3a4f0e9e2b11',
      externalId: 'ext-7',
      userName: 'ann@example.com',
      name: { givenName: 'Ann', familyName: 'Smith' },
      emails: [{ value: 'ann@example.com', type: 'work' }],
      [ENTERPRISE_USER]: { department: 'Sales' },
      active: true,
      groups: [{ value: '11', $ref: `${BASE}/Groups/11`, display: 'guides', type: 'direct' }],
    });
    expect(meta).to.deep.include({
      resourceType: 'User',
      created: '2026-11-01T00:00:00.000Z',
      lastModified: '2026-11-02T00:00:00.000Z',
      location: `${BASE}/Users/0d4c7a52-5b0e-4c1f-9f51-3a4f0e9e2b11`,
    });
    expect(meta.version).to.match(/^W\/"[A-Za-z0-9_-]{22}"$/);
    const bare = userResource(row({ externalId: null, scim: null, groups: [] }), BASE, OPAQUE);
    expect(Object.keys(bare)).to.deep.equal(['schemas', 'id', 'userName', 'active', 'meta']);
    expect(bare.schemas).to.deep.equal([CORE_USER]);
  });

  it('names a person by their row id on a box whose public subs are still row ids (migration 036), by id and location', () => {
    const resource = userResource(row(), BASE, SEQUENTIAL);
    expect(resource.id).to.equal('7');
    expect((resource.meta as Json).location).to.equal(`${BASE}/Users/7`);
  });

  it("changes a person's version when anything shown changes, and only then", () => {
    const version = (change: Partial<UserRow>): unknown => (userResource(row(change), BASE, OPAQUE).meta as Json).version;
    const base = version({});
    expect(version({})).to.equal(base);
    expect(userResource(row(), 'https://other.example/scim/v2', OPAQUE).meta)
      .to.have.property('version')
      .not.equal(base);
    const changes: Partial<UserRow>[] = [
      { email: 'anne@example.com' },
      { active: false },
      { externalId: 'ext-8' },
      { externalId: null },
      { scim: { name: { givenName: 'Anne', familyName: 'Smith' } } },
      { scim: { ...row().scim, title: 'Guide' } },
      { groups: [] },
      { groups: [{ id: 11, name: 'tour guides' }] },
      { updatedAt: new Date('2026-11-03T00:00:00Z') },
      { createdAt: new Date('2026-10-01T00:00:00Z') },
    ];
    const seen = new Set([base]);
    for (const change of changes) {
      const v = version(change);
      expect(seen.has(v), JSON.stringify(change)).to.equal(false);
      seen.add(v);
    }
    // What is not shown does not change it.
    expect(version({ passwordHash: 'other', data: '{"x":1}', emailVerified: false })).to.equal(base);
  });

  it('shows a group with its members; its version follows the group, not whether members are shown', () => {
    const members = [
      { id: 7, subject: '0d4c7a52-5b0e-4c1f-9f51-3a4f0e9e2b11', email: 'ann@example.com' },
      { id: 8, subject: '5e1f0b2a-8c3d-4e6f-a1b2-c3d4e5f60718', email: 'bob@example.com' },
    ];
    const shown = groupResource(groupRow({ externalId: 'g-1' }), members, BASE, OPAQUE);
    expect(shown).to.deep.include({
      schemas: [CORE_GROUP],
      id: '11',
      externalId: 'g-1',
      displayName: 'guides',
      members: [
        { value: '0d4c7a52-5b0e-4c1f-9f51-3a4f0e9e2b11', $ref: `${BASE}/Users/0d4c7a52-5b0e-4c1f-9f51-3a4f0e9e2b11`, type: 'User' },
        { value: '5e1f0b2a-8c3d-4e6f-a1b2-c3d4e5f60718', $ref: `${BASE}/Users/5e1f0b2a-8c3d-4e6f-a1b2-c3d4e5f60718`, type: 'User' },
      ],
    });
    expect(groupResource(groupRow(), members, BASE, SEQUENTIAL).members).to.deep.equal([
      { value: '7', $ref: `${BASE}/Users/7`, type: 'User' },
      { value: '8', $ref: `${BASE}/Users/8`, type: 'User' },
    ]);
    const hidden = groupResource(groupRow({ externalId: 'g-1' }), undefined, BASE, OPAQUE);
    expect(hidden).not.to.have.property('members');
    expect(groupResource(groupRow({ externalId: 'g-1' }), [], BASE, OPAQUE)).not.to.have.property('members');
    const version = (g: Json): unknown => (g.meta as Json).version;
    expect(version(hidden)).to.equal(version(shown));
    for (const change of [{ name: 'tour guides' }, { externalId: 'g-2' }, { updatedAt: new Date('2026-11-03T00:00:00Z') }])
      expect(
        version(groupResource(groupRow({ externalId: 'g-1', ...change }), members, BASE, OPAQUE)),
        JSON.stringify(change),
      ).not.to.equal(version(shown));
  });

  it('makes a weak ETag of any JSON, the same for the same JSON', () => {
    expect(versionOf({ a: 1 })).to.equal(versionOf({ a: 1 }));
    expect(versionOf({ a: 1 })).not.to.equal(versionOf({ a: 2 }));
    expect(versionOf({ a: [1, 2] })).not.to.equal(versionOf({ a: [2, 1] }));
  });
});

describe('SCIM: attributes and excludedAttributes (RFC 7644 §3.4.2.5)', () => {
  const ann = (): Json => ({
    schemas: [CORE_USER, ENTERPRISE_USER],
    id: '7',
    userName: 'ann@example.com',
    name: { givenName: 'Ann', familyName: 'Smith' },
    emails: [
      { value: 'ann@example.com', type: 'work' },
      { value: 'ann@home.example', type: 'home' },
    ],
    [ENTERPRISE_USER]: { department: 'Sales', manager: { value: '9', displayName: 'Bo' } },
    active: true,
    meta: { resourceType: 'User', version: 'W/"v"' },
  });

  it('returns only the attributes asked for, with id and schemas', () => {
    expect(project(User, ann(), ['USERNAME', 'nothing', 'password'], undefined)).to.deep.equal({
      schemas: [CORE_USER, ENTERPRISE_USER],
      id: '7',
      userName: 'ann@example.com',
    });
    expect(project(User, ann(), ['name.givenName', 'emails.value', 'meta.version'], undefined)).to.deep.equal({
      schemas: [CORE_USER, ENTERPRISE_USER],
      id: '7',
      name: { givenName: 'Ann' },
      emails: [{ value: 'ann@example.com' }, { value: 'ann@home.example' }],
      meta: { version: 'W/"v"' },
    });
    // Two sub-attributes of one attribute are put together.
    expect(project(User, ann(), ['emails.type', 'emails.value', 'name.familyName', 'name.givenName'], undefined)).to.deep.include({
      emails: ann().emails,
      name: ann().name,
    });
    expect(project(User, ann(), [`${ENTERPRISE_USER}:manager.value`, `${CORE_USER}:active`], undefined)).to.deep.equal({
      schemas: [CORE_USER, ENTERPRISE_USER],
      id: '7',
      active: true,
      [ENTERPRISE_USER]: { manager: { value: '9' } },
    });
  });

  it('returns an extension whole when its URN is asked for, and leaves it out when excluded', () => {
    expect(project(User, ann(), [ENTERPRISE_USER], undefined)).to.deep.equal({
      schemas: [CORE_USER, ENTERPRISE_USER],
      id: '7',
      [ENTERPRISE_USER]: ann()[ENTERPRISE_USER],
    });
    const without = project(User, ann(), undefined, [ENTERPRISE_USER]);
    expect(without).not.to.have.property(ENTERPRISE_USER);
    expect(without.schemas).to.deep.equal([CORE_USER]);
  });

  it('leaves out the excluded attributes and sub-attributes, never id', () => {
    const out = project(User, ann(), undefined, [
      'NAME.givenName',
      'emails.type',
      `${ENTERPRISE_USER}:department`,
      'meta',
      'id',
      'nothing',
    ]);
    const expected = ann();
    delete expected.meta;
    expected.name = { familyName: 'Smith' };
    expected.emails = [{ value: 'ann@example.com' }, { value: 'ann@home.example' }];
    expected[ENTERPRISE_USER] = { manager: { value: '9', displayName: 'Bo' } };
    expect(out).to.deep.equal(expected);
    expect(project(User, ann(), undefined, ['emails'])).not.to.have.property('emails');
  });

  it('gives the resource unchanged when neither is asked, and does not change the one it is given', () => {
    const resource = ann();
    expect(project(User, resource, undefined, undefined)).to.deep.equal(ann());
    expect(project(User, resource, [], [])).to.deep.equal(ann());
    project(User, resource, undefined, ['name.givenName', 'emails.type', `${ENTERPRISE_USER}:department`]);
    project(User, resource, ['name.givenName'], undefined);
    expect(resource).to.deep.equal(ann());
  });
});
