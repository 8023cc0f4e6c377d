// SCIM filters and PATCH paths (RFC 7644 §3.4.2.2, §3.5.2) as the store and PATCH receive them:
// the tree a filter is read into, in the schemas' spelling, and the 400s a filter is refused with.
import { expect } from 'chai';
import { FILTER_LIMITS, evaluate, parseFilter, parsePatchPath, resolvePath } from '../../../api/people/scim/filter.js';
import { ScimError } from '../../../api/people/scim/errors.js';
import { CORE_USER, ENTERPRISE_USER, RESOURCE_TYPES } from '../../../api/people/scim/schemas.js';
import type { AttrRef, ScimFilter } from '../../../api/store/scim-search.js';

const User = RESOURCE_TYPES.User;
const Group = RESOURCE_TYPES.Group;

const str = (path: string[], more: Partial<AttrRef> = {}): AttrRef => ({ path, type: 'string', caseExact: false, ...more });
const eq = (attr: AttrRef, value: string | boolean): ScimFilter => ({ op: 'eq', attr, value });
const userName = (value: string): ScimFilter => eq(str(['userName']), value);

/** The ScimError `f` throws. */
function refusal(f: () => unknown): ScimError {
  try {
    f();
  } catch (err) {
    expect(err).to.be.instanceOf(ScimError);
    return err as ScimError;
  }
  throw new Error('not refused');
}

function refusedFilter(filter: string, type = User): ScimError {
  const err = refusal(() => parseFilter(type, filter));
  expect([err.status, err.scimType], filter).to.deep.equal([400, 'invalidFilter']);
  return err;
}

describe('SCIM filters (RFC 7644 §3.4.2.2)', () => {
  it('binds not tighter than and, and tighter than or; parentheses regroup', () => {
    const [a, b, c] = [userName('a'), userName('b'), userName('c')];
    expect(parseFilter(User, 'userName eq "a" or userName eq "b" and userName eq "c"')).to.deep.equal({
      op: 'or',
      left: a,
      right: { op: 'and', left: b, right: c },
    });
    expect(parseFilter(User, 'userName eq "a" and userName eq "b" or userName eq "c"')).to.deep.equal({
      op: 'or',
      left: { op: 'and', left: a, right: b },
      right: c,
    });
    expect(parseFilter(User, '(userName eq "a" or userName eq "b") and userName eq "c"')).to.deep.equal({
      op: 'and',
      left: { op: 'or', left: a, right: b },
      right: c,
    });
    expect(parseFilter(User, 'not (userName eq "a") and userName eq "b"')).to.deep.equal({
      op: 'and',
      left: { op: 'not', filter: a },
      right: b,
    });
    // Chains associate to the left.
    expect(parseFilter(User, 'userName eq "a" or userName eq "b" or userName eq "c"')).to.deep.equal({
      op: 'or',
      left: { op: 'or', left: a, right: b },
      right: c,
    });
  });

  it('reads attribute names and operators in any case, and gives the schema spelling', () => {
    expect(parseFilter(User, 'USERNAME EQ "Ann" AND NOT (Active Eq TRUE) OR name.GIVENNAME Sw "a"')).to.deep.equal({
      op: 'or',
      left: {
        op: 'and',
        left: userName('Ann'),
        right: { op: 'not', filter: eq({ path: ['active'], type: 'boolean', caseExact: false }, true) },
      },
      right: { op: 'sw', attr: str(['name', 'givenName']), value: 'a' },
    });
    expect(parseFilter(User, 'externalid pr')).to.deep.equal({ op: 'pr', attr: str(['externalId'], { caseExact: true }) });
    expect(parseFilter(Group, 'DISPLAYNAME co "ops"')).to.deep.equal({ op: 'co', attr: str(['displayName']), value: 'ops' });
    for (const op of ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le'])
      expect(parseFilter(User, `title ${op.toUpperCase()} "x"`), op).to.deep.equal({ op, attr: str(['title']), value: 'x' });
  });

  it('reads URN-prefixed attributes of the core schema and of the enterprise extension', () => {
    expect(parseFilter(User, `${CORE_USER}:userName eq "a"`)).to.deep.equal(userName('a'));
    expect(parseFilter(User, `${CORE_USER.toUpperCase()}:name.familyName eq "J"`)).to.deep.equal(eq(str(['name', 'familyName']), 'J'));
    expect(parseFilter(User, `${ENTERPRISE_USER}:department eq "Sales"`)).to.deep.equal(eq(str([ENTERPRISE_USER, 'department']), 'Sales'));
    expect(parseFilter(User, `${ENTERPRISE_USER.toLowerCase()}:MANAGER.value eq "7"`)).to.deep.equal(
      eq(str([ENTERPRISE_USER, 'manager', 'value']), '7'),
    );
    // The common attributes are the core schema's, not an extension's; a Group has no User schema.
    expect(parseFilter(User, `${CORE_USER}:id eq "7"`)).to.deep.equal(eq(str(['id'], { caseExact: true }), '7'));
    refusedFilter(`${ENTERPRISE_USER}:id eq "7"`);
    refusedFilter(`${ENTERPRISE_USER}:userName eq "a"`);
    refusedFilter(`${CORE_USER}:displayName eq "a"`, Group);
  });

  it('reads a multi-valued attribute alone as its values, and a value path as a test of one element', () => {
    expect(parseFilter(User, 'emails co "@example.com"')).to.deep.equal({
      op: 'co',
      attr: { multi: ['emails'], ...str(['value']) },
      value: '@example.com',
    });
    expect(parseFilter(User, 'emails.type eq "work"')).to.deep.equal(eq({ multi: ['emails'], ...str(['type']) }, 'work'));
    expect(parseFilter(User, 'emails[type eq "work" and value co "x"]')).to.deep.equal({
      op: 'has',
      multi: ['emails'],
      filter: { op: 'and', left: eq(str(['type']), 'work'), right: { op: 'co', attr: str(['value']), value: 'x' } },
    });
    expect(parseFilter(Group, 'Members[Value eq "7"]')).to.deep.equal({ op: 'has', multi: ['members'], filter: eq(str(['value']), '7') });
    expect(parseFilter(User, 'emails[primary eq true] and userName eq "a"')).to.deep.equal({
      op: 'and',
      left: { op: 'has', multi: ['emails'], filter: eq({ path: ['primary'], type: 'boolean', caseExact: false }, true) },
      right: userName('a'),
    });
  });

  it('reads Entra ID\'s emails[type eq "work"].value eq "x" as the RFC\'s emails[type eq "work" and value eq "x"]', () => {
    const rfc = parseFilter(User, 'emails[type eq "work" and value eq "ann@example.com"]');
    expect(parseFilter(User, 'emails[type eq "work"].value eq "ann@example.com"')).to.deep.equal(rfc);
    expect(parseFilter(User, 'emails[TYPE eq "work"].VALUE EQ "ann@example.com"')).to.deep.equal(rfc);
    refusedFilter('emails[type eq "work"].nothing eq "x"');
    refusedFilter('emails[type eq "work"].value');
  });

  it('reads string values as JSON strings, booleans in any case, and times as UTC instants', () => {
    expect(parseFilter(User, 'displayName eq "a\\"b"')).to.deep.equal(eq(str(['displayName']), 'a"b'));
    expect(parseFilter(User, 'displayName eq "back\\\\slash \\u00e9"')).to.deep.equal(eq(str(['displayName']), 'back\\slash é'));
    expect(parseFilter(User, 'displayName eq "(and) [or] not"')).to.deep.equal(eq(str(['displayName']), '(and) [or] not'));
    const active = { path: ['active'], type: 'boolean' as const, caseExact: false };
    expect(parseFilter(User, 'active eq false')).to.deep.equal(eq(active, false));
    expect(parseFilter(User, 'active ne True')).to.deep.equal({ op: 'ne', attr: active, value: true });
    const modified = { path: ['meta', 'lastModified'], type: 'dateTime' as const, caseExact: false };
    expect(parseFilter(User, 'meta.lastModified gt "2011-05-13T04:42:34Z"')).to.deep.equal({
      op: 'gt',
      attr: modified,
      value: '2011-05-13T04:42:34.000Z',
    });
    expect(parseFilter(User, 'meta.lastModified ge "2011-05-13T06:42:34.5+02:00"')).to.deep.equal({
      op: 'ge',
      attr: modified,
      value: '2011-05-13T04:42:34.500Z',
    });
  });

  it('refuses a time that is not an RFC 3339 date-time', () => {
    for (const value of ['yesterday', '1', 'hello 2', 'May 13 2011', '2011-13-45T00:00:00Z'])
      expect(refusedFilter(`meta.lastModified gt "${value}"`).message, value).to.match(/time/);
  });

  it('refuses what it cannot read exactly, saying what', () => {
    const refusals: [string, RegExp][] = [
      ['nickname2 eq "a"', /not an attribute/],
      ['name.nothing eq "a"', /not an attribute/],
      ['name.givenName.more eq "a"', /not an attribute/],
      ['password eq "secret"', /cannot be searched/],
      ['password pr', /cannot be searched/],
      ['name eq "Ann"', /complex/],
      ['addresses eq "x"', /complex/],
      ['active gt true', /only eq and ne/],
      ['active co true', /only eq and ne/],
      ['active eq "yes"', /true or false/],
      ['userName eq null', /null/],
      ['userName eq ann', /double quotes/],
      ['userName eq "ann', /not closed/],
      ['userName eq "a\\x"', /not a JSON string/],
      ['userName eq "a" garbage', /unexpected "garbage"/],
      ['userName eq "a")', /unexpected "\)"/],
      ['(userName eq "a"', /ends where/],
      ['userName eq', /ends where a value/],
      ['userName', /ends where an operator/],
      ['userName like "a"', /not a filter operator/],
      ['userName eq "a" and', /ends where an attribute/],
      ['not userName eq "a"', /"\(" expected/],
      ['emails[value eq "a"', /ends where "\]"/],
      ['userName[value eq "a"]', /not a multi-valued attribute/],
      ['name[givenName eq "a"]', /not a multi-valued attribute/],
      ['emails[type[value eq "a"]]', /cannot hold another/],
      ['emails[nothing eq "a"]', /not an attribute of emails/],
      ['"userName" eq "a"', /attribute name expected/],
      ['', /empty/],
      ['   ', /empty/],
    ];
    for (const [filter, detail] of refusals) expect(refusedFilter(filter).message, filter).to.match(detail);
  });

  it(`holds a filter to ${FILTER_LIMITS.length} characters, ${FILTER_LIMITS.comparisons} comparisons and ${FILTER_LIMITS.depth} levels`, () => {
    const longest = `displayName eq "${'x'.repeat(FILTER_LIMITS.length - 'displayName eq ""'.length)}"`;
    expect(longest).to.have.length(FILTER_LIMITS.length);
    expect(parseFilter(User, longest)).to.have.property('op', 'eq');
    expect(refusedFilter(`${longest} `).message).to.match(/longer than 2000/);

    const chain = (n: number): string => Array.from({ length: n }, (_, i) => `userName eq "${i}"`).join(' or ');
    expect(parseFilter(User, chain(FILTER_LIMITS.comparisons))).to.have.property('op', 'or');
    expect(refusedFilter(chain(FILTER_LIMITS.comparisons + 1)).message).to.match(/more than 20 comparisons/);
    // A value path's tests count as comparisons.
    const paths = Array.from({ length: FILTER_LIMITS.comparisons / 2 + 1 }, () => 'emails[type eq "w" and value eq "v"]').join(' or ');
    expect(refusedFilter(paths).message).to.match(/more than 20 comparisons/);

    const nested = (n: number): string => `${'('.repeat(n)}userName eq "a"${')'.repeat(n)}`;
    expect(parseFilter(User, nested(FILTER_LIMITS.depth))).to.deep.equal(userName('a'));
    expect(refusedFilter(nested(FILTER_LIMITS.depth + 1)).message).to.match(/deeper than 8/);
    const nots = (n: number): string => `${'not ('.repeat(n)}userName eq "a"${')'.repeat(n)}`;
    expect(parseFilter(User, nots(FILTER_LIMITS.depth))).to.have.property('op', 'not');
    expect(refusedFilter(nots(FILTER_LIMITS.depth + 1)).message).to.match(/deeper than 8/);
    // Far past the limit, the refusal is the same (no stack exhausted).
    expect(refusedFilter(nested(900)).message).to.match(/deeper than 8/);
  });
});

describe('SCIM attribute paths', () => {
  it('resolves names, sub-attributes and URN-prefixed names to the schemas, and nothing else', () => {
    const givenName = resolvePath(User, 'NAME.givenname')!;
    expect([givenName.top.name, givenName.topPath, givenName.sub?.name]).to.deep.equal(['name', ['name'], 'givenName']);
    const department = resolvePath(User, `${ENTERPRISE_USER}:Department`)!;
    expect([department.top.name, department.topPath, department.sub]).to.deep.equal([
      'department',
      [ENTERPRISE_USER, 'department'],
      undefined,
    ]);
    const lastModified = resolvePath(Group, 'meta.lastModified')!;
    expect([lastModified.topPath, lastModified.sub?.type]).to.deep.equal([['meta'], 'dateTime']);
    for (const raw of [
      'nothing',
      'name.nothing',
      'name.givenName.x',
      '',
      'urn:example:User:userName',
      `${ENTERPRISE_USER}:nothing`,
      'userName',
    ])
      expect(resolvePath(raw === 'userName' ? Group : User, raw), raw).to.equal(undefined);
  });

  it('reads a PATCH path: an attribute, a value filter, and a sub-attribute after it', () => {
    const members = parsePatchPath(Group, 'members[value eq "2819c223"]');
    expect([members.top.name, members.sub, members.filter]).to.deep.equal(['members', undefined, eq(str(['value']), '2819c223')]);
    const work = parsePatchPath(User, `${CORE_USER}:emails[type eq "work" and primary eq true].value`);
    expect([work.top.name, work.sub?.name, work.filter]).to.deep.equal([
      'emails',
      'value',
      { op: 'and', left: eq(str(['type']), 'work'), right: eq({ path: ['primary'], type: 'boolean', caseExact: false }, true) },
    ]);
    // A bracket inside a quoted value is part of the value.
    expect(parsePatchPath(User, 'emails[value eq "a]b"]').filter).to.deep.equal(eq(str(['value']), 'a]b'));
    expect(parsePatchPath(User, `${ENTERPRISE_USER}:manager.value`).topPath).to.deep.equal([ENTERPRISE_USER, 'manager']);
  });

  it('refuses a PATCH path it cannot read with invalidPath', () => {
    for (const raw of [
      'nothing',
      'name.nothing',
      'emails[type eq "work"',
      'emails[]',
      'emails[type eq "work"]value',
      'emails[type eq "work"].nothing',
      'userName[value eq "a"]',
      'emails.value[type eq "work"]',
      'emails[type eq work]',
      'emails[nothing eq "a"]',
      `emails[value eq "${'x'.repeat(FILTER_LIMITS.length)}"]`,
    ]) {
      const err = refusal(() => parsePatchPath(User, raw));
      expect([err.status, err.scimType], raw).to.deep.equal([400, 'invalidPath']);
    }
  });
});

describe('SCIM filters evaluated on JSON (PATCH value paths)', () => {
  const ann = {
    userName: 'Ann@Example.com',
    externalId: 'AbC',
    active: true,
    name: { givenName: 'Ann' },
    emails: [
      { value: 'ann@work.example', type: 'work', primary: true },
      { value: 'ann@home.example', type: 'home' },
    ],
    [ENTERPRISE_USER]: { department: 'Sales' },
    meta: { lastModified: '2026-11-25T10:00:00.000Z' },
  };
  const holds = (filter: string): boolean => evaluate(parseFilter(User, filter), ann);

  it('compares as the attribute says: case-insensitive unless caseExact', () => {
    expect(holds('userName eq "ann@example.com"')).to.equal(true);
    expect(holds('externalId eq "abc"')).to.equal(false);
    expect(holds('externalId eq "AbC"')).to.equal(true);
    expect(holds('userName sw "ANN" and userName ew ".COM" and userName co "@ex"')).to.equal(true);
    expect(holds('userName ne "ann@example.com"')).to.equal(false);
    expect(holds(`${ENTERPRISE_USER}:department eq "sales"`)).to.equal(true);
    expect(holds('meta.lastModified gt "2026-11-25T09:59:59Z" and meta.lastModified lt "2026-11-25T10:00:01Z"')).to.equal(true);
    expect(holds('meta.lastModified ge "2026-11-25T10:00:00Z" and meta.lastModified le "2026-11-25T10:00:00Z"')).to.equal(true);
  });

  it('reads pr, booleans, not, and value paths over the elements', () => {
    expect(holds('name.givenName pr and not (title pr)')).to.equal(true);
    expect(holds('active eq true and not (active ne true)')).to.equal(true);
    expect(holds('emails[type eq "work" and primary eq true]')).to.equal(true);
    // One element must satisfy the whole bracket: the work address is not at home.
    expect(holds('emails[type eq "work" and value co "home"]')).to.equal(false);
    expect(holds('emails[type eq "home"].value eq "ANN@home.example"')).to.equal(true);
    expect(holds('emails[type eq "other"] or userName eq "nobody"')).to.equal(false);
    // An absent attribute matches no comparison, not even ne.
    expect(holds('title ne "x"')).to.equal(false);
  });

  it('reads a multi-valued attribute outside brackets as any of its elements', () => {
    expect(holds('emails co "@home.example"')).to.equal(true);
    expect(holds('emails.type eq "home"')).to.equal(true);
    expect(holds('emails.type eq "other"')).to.equal(false);
    expect(holds('emails.primary eq true')).to.equal(true);
  });
});
