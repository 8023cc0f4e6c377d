// PATCH (RFC 7644 §3.5.2) as a pure function: the RFC's own examples, the forms Entra ID and Okta
// send, and the refusals — each a resource in, the resource as it would be (or a ScimError) out.
import { expect } from 'chai';
import { MAX_OPERATIONS, applyPatch, type Json } from '../../../api/people/scim/patch.js';
import { readUser } from '../../../api/people/scim/resources.js';
import { ScimError } from '../../../api/people/scim/errors.js';
import { ENTERPRISE_USER, PATCH_OP, RESOURCE_TYPES } from '../../../api/people/scim/schemas.js';

const User = RESOURCE_TYPES.User;
const Group = RESOURCE_TYPES.Group;
const BABS = '2819c223-7f76-453a-919d-413861904646';
const JOHN = '902c246b-6245-4190-8e05-00816be7344a';

const ops = (...operations: unknown[]): Json => ({ schemas: [PATCH_OP], Operations: operations });
const patchUser = (resource: Json, ...operations: unknown[]): Json => applyPatch(User, resource, ops(...operations));
const patchGroup = (resource: Json, ...operations: unknown[]): Json => applyPatch(Group, resource, ops(...operations));

function refusal(f: () => unknown): [number, string | undefined] {
  try {
    f();
  } catch (err) {
    expect(err).to.be.instanceOf(ScimError);
    return [(err as ScimError).status, (err as ScimError).scimType];
  }
  throw new Error('not refused');
}

const group = (): Json => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:Group'],
  id: '11',
  displayName: 'Tour Guides',
  members: [
    { value: BABS, display: 'Babs Jensen' },
    { value: JOHN, display: 'Mandy Pepperidge' },
  ],
});

const user = (): Json => ({
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  id: '7',
  userName: 'bjensen@example.com',
  active: true,
  name: { givenName: 'Barbara', familyName: 'Jensen' },
  emails: [
    { value: 'bjensen@example.com', type: 'work', primary: true },
    { value: 'babs@jensen.org', type: 'home' },
  ],
  addresses: [{ type: 'work', streetAddress: '100 Universal City Plaza', locality: 'Hollywood' }],
  groups: [{ value: '11', display: 'Tour Guides' }],
  meta: { resourceType: 'User', version: 'W/"a"' },
});

describe('SCIM PATCH: the examples of RFC 7644 §3.5.2', () => {
  it('adds members, once each (§3.5.2.1)', () => {
    const out = patchGroup(group(), { op: 'add', path: 'members', value: [{ display: 'Ann', value: '3' }, { value: BABS }] });
    expect(out.members).to.deep.equal([...(group().members as Json[]), { display: 'Ann', value: '3' }]);
  });

  it('adds attributes given without a path (§3.5.2.1), in the schema spelling', () => {
    const out = patchUser(user(), { op: 'add', value: { emails: [{ value: 'babs@example.org', type: 'other' }], nickname: 'Babs' } });
    expect(out.nickName).to.equal('Babs');
    expect(out).not.to.have.property('nickname');
    expect(out.emails).to.deep.equal([...(user().emails as Json[]), { value: 'babs@example.org', type: 'other' }]);
  });

  it('removes a member by a filter, all members, and elements matching two tests (§3.5.2.2)', () => {
    expect(patchGroup(group(), { op: 'remove', path: `members[value eq "${BABS}"]` }).members).to.deep.equal([
      { value: JOHN, display: 'Mandy Pepperidge' },
    ]);
    expect(patchGroup(group(), { op: 'remove', path: 'members' })).not.to.have.property('members');
    const out = patchUser(user(), { op: 'remove', path: 'emails[type eq "work" and value ew "example.com"]' });
    expect(out.emails).to.deep.equal([{ value: 'babs@jensen.org', type: 'home' }]);
  });

  it('replaces all members, an element by a filter, and a sub-attribute of the matching elements (§3.5.2.3)', () => {
    expect(patchGroup(group(), { op: 'replace', path: 'members', value: [{ value: '3' }] }).members).to.deep.equal([{ value: '3' }]);
    const moved = patchUser(user(), {
      op: 'replace',
      path: 'addresses[type eq "work"]',
      value: { type: 'work', streetAddress: '911 Universal City Plaza', locality: 'Hollywood', primary: true },
    });
    expect(moved.addresses).to.deep.equal([
      { type: 'work', streetAddress: '911 Universal City Plaza', locality: 'Hollywood', primary: true },
    ]);
    const street = patchUser(user(), { op: 'replace', path: 'addresses[type eq "work"].streetAddress', value: '1010 Broadway Ave' });
    expect(street.addresses).to.deep.equal([{ type: 'work', streetAddress: '1010 Broadway Ave', locality: 'Hollywood' }]);
    const email = patchUser(user(), { op: 'replace', path: 'emails[type eq "work"].value', value: 'barbara@example.com' });
    expect(email.emails).to.deep.equal([
      { value: 'barbara@example.com', type: 'work', primary: true },
      { value: 'babs@jensen.org', type: 'home' },
    ]);
  });

  it('replaces sub-attributes of a complex attribute and keeps the others', () => {
    expect(patchUser(user(), { op: 'replace', path: 'name', value: { givenName: 'Babs' } }).name).to.deep.equal({
      givenName: 'Babs',
      familyName: 'Jensen',
    });
    expect(patchUser(user(), { op: 'add', path: 'name.middleName', value: 'Jane' }).name).to.deep.equal({
      givenName: 'Barbara',
      familyName: 'Jensen',
      middleName: 'Jane',
    });
    expect(patchUser(user(), { op: 'remove', path: 'name.familyName' }).name).to.deep.equal({ givenName: 'Barbara' });
  });

  it('applies the operations in order, to a copy: the resource given is not changed', () => {
    const before = user();
    const out = patchUser(
      before,
      { op: 'replace', path: 'displayName', value: 'Babs' },
      { op: 'replace', path: 'displayName', value: 'Barbara' },
      { op: 'remove', path: 'emails[type eq "home"]' },
      { op: 'replace', path: 'name.givenName', value: 'B' },
    );
    expect(out.displayName).to.equal('Barbara');
    expect(before).to.deep.equal(user());
  });
});

describe('SCIM PATCH: what Entra ID and Okta send', () => {
  it('reads ops in any case, and "True"/"False" strings as booleans once read as a User', () => {
    const out = patchUser(
      user(),
      { op: 'Replace', path: 'active', value: 'False' },
      { op: 'Add', path: 'title', value: 'Guide' },
      { op: 'REMOVE', path: 'nickName' },
    );
    expect([out.active, out.title]).to.deep.equal(['False', 'Guide']);
    expect(readUser(out).active).to.equal(false);
  });

  it('removes members named in a value list (Entra ID)', () => {
    const out = patchGroup(group(), { op: 'Remove', path: 'members', value: [{ value: BABS }, { value: 'nobody' }] });
    expect(out.members).to.deep.equal([{ value: JOHN, display: 'Mandy Pepperidge' }]);
  });

  it('reads a value without a path whose keys are attributes, dotted paths and URN-prefixed paths', () => {
    const out = patchUser(user(), {
      op: 'replace',
      value: {
        active: false,
        'name.givenName': 'Babs',
        'emails[type eq "work"].value': 'babs@example.com',
        [`${ENTERPRISE_USER}:department`]: 'Tours',
        'urn:ietf:params:scim:schemas:core:2.0:User:displayName': 'Babs Jensen',
        id: '7',
        schemas: ['ignored'],
      },
    });
    expect(out.active).to.equal(false);
    expect(out.name).to.deep.equal({ givenName: 'Babs', familyName: 'Jensen' });
    expect((out.emails as Json[])[0]).to.deep.equal({ value: 'babs@example.com', type: 'work', primary: true });
    expect(out[ENTERPRISE_USER]).to.deep.equal({ department: 'Tours' });
    expect(out.displayName).to.equal('Babs Jensen');
    expect([out.id, out.schemas]).to.deep.equal(['7', user().schemas]);
  });

  it('reads an extension under its URN in a value without a path (Okta)', () => {
    const out = patchUser(user(), {
      op: 'add',
      value: { [ENTERPRISE_USER.toLowerCase()]: { Department: 'Tours', manager: { value: '9' } }, title: 'Guide' },
    });
    expect(out[ENTERPRISE_USER]).to.deep.equal({ department: 'Tours', manager: { value: '9' } });
    expect(out.title).to.equal('Guide');
  });

  it('takes an extension URN as a path: add merges, replace puts in place, remove drops', () => {
    const withExt = { ...user(), [ENTERPRISE_USER]: { department: 'Tours', costCenter: '4130' } };
    const added = patchUser(withExt, { op: 'add', path: ENTERPRISE_USER, value: { division: 'Theme Park', schemas: ['x'] } });
    expect(added[ENTERPRISE_USER]).to.deep.equal({ department: 'Tours', costCenter: '4130', division: 'Theme Park' });
    const replaced = patchUser(withExt, { op: 'replace', path: ENTERPRISE_USER, value: { division: 'Theme Park' } });
    expect(replaced[ENTERPRISE_USER]).to.deep.equal({ division: 'Theme Park' });
    expect(patchUser(withExt, { op: 'remove', path: ENTERPRISE_USER })).not.to.have.property(ENTERPRISE_USER);
    // An attribute of the extension by its URN-prefixed path.
    const dept = patchUser(withExt, { op: 'remove', path: `${ENTERPRISE_USER}:department` });
    expect(dept[ENTERPRISE_USER]).to.deep.equal({ costCenter: '4130' });
    expect(patchUser(user(), { op: 'add', path: `${ENTERPRISE_USER}:manager.value`, value: '9' })[ENTERPRISE_USER]).to.deep.equal({
      manager: { value: '9' },
    });
    // Removing from an extension the resource does not have changes nothing.
    expect(patchUser(user(), { op: 'remove', path: `${ENTERPRISE_USER}:department` })).to.deep.equal(user());
  });

  it('makes the element an eq filter describes when none matches, and refuses other filters that match nothing', () => {
    const bare = { ...user(), emails: undefined };
    const made = patchUser(bare, { op: 'replace', path: 'emails[type eq "work"].value', value: 'babs@example.com' });
    expect(made.emails).to.deep.equal([{ type: 'work', value: 'babs@example.com' }]);
    const added = patchUser(user(), { op: 'add', path: 'phoneNumbers[type eq "mobile" and primary eq true]', value: { value: '+1 555' } });
    expect(added.phoneNumbers).to.deep.equal([{ type: 'mobile', primary: true, value: '+1 555' }]);
    expect(
      refusal(() => patchUser(user(), { op: 'replace', path: 'emails[type ne "work" and type ne "home"].value', value: 'x' })),
    ).to.deep.equal([400, 'noTarget']);
    expect(refusal(() => patchUser(user(), { op: 'replace', path: 'emails[value co "nowhere"].type', value: 'x' }))).to.deep.equal([
      400,
      'noTarget',
    ]);
  });
});

describe('SCIM PATCH: refusals', () => {
  it('refuses removing a required attribute or active', () => {
    expect(refusal(() => patchUser(user(), { op: 'remove', path: 'userName' }))).to.deep.equal([400, 'mutability']);
    expect(refusal(() => patchUser(user(), { op: 'remove', path: 'urn:ietf:params:scim:schemas:core:2.0:User:userName' }))).to.deep.equal([
      400,
      'mutability',
    ]);
    expect(refusal(() => patchGroup(group(), { op: 'remove', path: 'displayName' }))).to.deep.equal([400, 'mutability']);
    expect(refusal(() => patchUser(user(), { op: 'remove', path: 'active' }))).to.deep.equal([400, 'invalidValue']);
    expect(refusal(() => patchUser(user(), { op: 'Remove', path: 'ACTIVE' }))).to.deep.equal([400, 'invalidValue']);
  });

  it('refuses changing what the box sets: id, meta, groups', () => {
    for (const operation of [
      { op: 'replace', path: 'id', value: '8' },
      { op: 'replace', path: 'meta.version', value: 'W/"b"' },
      { op: 'remove', path: 'meta' },
      { op: 'add', path: 'groups', value: [{ value: '12' }] },
      { op: 'remove', path: 'groups[value eq "11"]' },
      { op: 'replace', value: { id: '8' } },
      { op: 'replace', value: { groups: [] } },
    ])
      expect(
        refusal(() => patchUser(user(), operation)),
        JSON.stringify(operation),
      ).to.deep.equal([400, 'mutability']);
  });

  it('refuses a path no schema defines, or one it cannot read, with invalidPath', () => {
    for (const path of ['nickname2', 'name.nothing', 'emails[type eq "work"', 'emails[type eq work]', 'urn:example:x:department', 5])
      expect(
        refusal(() => patchUser(user(), { op: 'replace', path, value: 'x' })),
        String(path),
      ).to.deep.equal([400, 'invalidPath']);
    expect(refusal(() => patchUser(user(), { op: 'replace', value: { nothing: 'x' } }))).to.deep.equal([400, 'invalidPath']);
  });

  it('refuses what is not a PatchOp message', () => {
    for (const body of [
      null,
      [],
      { Operations: [{ op: 'add', path: 'title', value: 'x' }] },
      { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], Operations: [{ op: 'add', path: 'title', value: 'x' }] },
      { schemas: [PATCH_OP] },
      { schemas: [PATCH_OP], Operations: [] },
      ops('add'),
      ops({ op: 'move', path: 'title', value: 'x' }),
      ops({ op: 'add', path: 'title' }),
    ])
      expect(
        refusal(() => applyPatch(User, user(), body)),
        JSON.stringify(body),
      ).to.deep.equal([400, 'invalidSyntax']);
    expect(refusal(() => patchUser(user(), { op: 'remove' }))).to.deep.equal([400, 'noTarget']);
    expect(refusal(() => patchUser(user(), { op: 'add', value: 'x' }))).to.deep.equal([400, 'invalidValue']);
    expect(refusal(() => patchUser(user(), { op: 'add', path: ENTERPRISE_USER, value: 'x' }))).to.deep.equal([400, 'invalidValue']);
  });

  it(`takes at most ${MAX_OPERATIONS} operations`, () => {
    const many = (n: number): unknown[] => Array.from({ length: n }, (_, i) => ({ op: 'replace', path: 'title', value: String(i) }));
    expect(patchUser(user(), ...many(MAX_OPERATIONS)).title).to.equal(String(MAX_OPERATIONS - 1));
    expect(refusal(() => patchUser(user(), ...many(MAX_OPERATIONS + 1)))).to.deep.equal([400, 'invalidSyntax']);
  });
});
