// What the SCIM door serves, as data: the attributes of a User (RFC 7643 §4.1, and the enterprise
// extension of §4.3) and of a Group (§4.2) that the box keeps, and the discovery documents made
// from them (§5 ServiceProviderConfig, §6 ResourceTypes, §7 Schemas). Filters, PATCH paths and
// writes look attributes up here, case-insensitively (RFC 7643 §2.1), and use their spelling.
import type { AttrType } from '../../store/scim-search.js';

export const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const ENTERPRISE_USER = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const CORE_GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_RESPONSE = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const SEARCH_REQUEST = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
export const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';

type Mutability = 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';

export interface Attribute {
  name: string;
  type: AttrType;
  multiValued: boolean;
  required: boolean;
  caseExact: boolean;
  mutability: Mutability;
  returned: 'always' | 'never' | 'default' | 'request';
  uniqueness: 'none' | 'server' | 'global';
  subAttributes?: Attribute[];
  canonicalValues?: string[];
  referenceTypes?: string[];
  description: string;
}

const attr = (name: string, description: string, more: Partial<Attribute> = {}): Attribute => ({
  name,
  type: 'string',
  multiValued: false,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  description,
  ...more,
});

/** A multi-valued attribute of `value`, `display`, `type` and `primary` (RFC 7643 §2.4). */
const multi = (name: string, description: string, types: string[], value: Partial<Attribute> = {}): Attribute =>
  attr(name, description, {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attr('value', `The ${name} value.`, value),
      attr('display', 'A name for display.'),
      attr('type', 'What the value is for.', { canonicalValues: types }),
      attr('primary', 'The preferred value of the attribute.', { type: 'boolean' }),
    ],
  });

const USER_ATTRIBUTES: Attribute[] = [
  attr('userName', "The person's sign-in name: their email address, or a name that is not an address (then they have no address).", {
    required: true,
    uniqueness: 'server',
  }),
  attr('name', "The person's name.", {
    type: 'complex',
    subAttributes: ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'].map((n) =>
      attr(n, `The ${n} part of the name.`),
    ),
  }),
  attr('displayName', 'The name shown for the person.'),
  attr('nickName', 'A casual name.'),
  attr('profileUrl', "A URL of the person's profile.", { type: 'reference', referenceTypes: ['external'] }),
  attr('title', "The person's title."),
  attr('userType', 'How the organisation relates to the person.'),
  attr('preferredLanguage', 'The preferred language (RFC 7231 Accept-Language form).'),
  attr('locale', 'The default location, for formatting.'),
  attr('timezone', 'The time zone (IANA).'),
  attr('active', 'False turns the person off: what they obtained ends, and they cannot sign in until it is true again.', {
    type: 'boolean',
  }),
  attr('password', 'A new password for the box (stored hashed; never returned).', { mutability: 'writeOnly', returned: 'never' }),
  multi('emails', 'Email addresses.', ['work', 'home', 'other']),
  multi('phoneNumbers', 'Phone numbers.', ['work', 'home', 'mobile', 'fax', 'pager', 'other']),
  attr('addresses', 'Postal addresses.', {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      ...['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country'].map((n) => attr(n, `The ${n} of the address.`)),
      attr('type', 'What the address is for.', { canonicalValues: ['work', 'home', 'other'] }),
      attr('primary', 'The preferred address.', { type: 'boolean' }),
    ],
  }),
  attr('groups', "The person's groups (change them through the Groups' members).", {
    type: 'complex',
    multiValued: true,
    mutability: 'readOnly',
    subAttributes: [
      attr('value', 'The group id.', { mutability: 'readOnly' }),
      attr('$ref', 'The group URI.', { type: 'reference', referenceTypes: ['Group'], mutability: 'readOnly' }),
      attr('display', 'The group name.', { mutability: 'readOnly' }),
      attr('type', 'direct: the box has no nested groups.', { mutability: 'readOnly', canonicalValues: ['direct'] }),
    ],
  }),
  multi('roles', 'Roles in the organisation.', []),
];

const ENTERPRISE_ATTRIBUTES: Attribute[] = [
  attr('employeeNumber', 'The employee number.'),
  attr('costCenter', 'The cost center.'),
  attr('organization', 'The organisation.'),
  attr('division', 'The division.'),
  attr('department', 'The department.'),
  attr('manager', "The person's manager.", {
    type: 'complex',
    subAttributes: [
      attr('value', "The manager's id."),
      attr('$ref', "The manager's URI.", { type: 'reference', referenceTypes: ['User'] }),
      attr('displayName', "The manager's name.", { mutability: 'readOnly' }),
    ],
  }),
];

const GROUP_ATTRIBUTES: Attribute[] = [
  attr('displayName', "The group's name in the box (policies and tokens name it).", { required: true, uniqueness: 'server' }),
  attr('members', 'The people in the group (the box has no nested groups).', {
    type: 'complex',
    multiValued: true,
    subAttributes: [
      attr('value', "The person's id.", { mutability: 'immutable' }),
      attr('$ref', "The person's URI.", { type: 'reference', referenceTypes: ['User'], mutability: 'immutable' }),
      attr('type', 'User: the box has no nested groups.', { mutability: 'immutable', canonicalValues: ['User'] }),
    ],
  }),
];

export interface SchemaDoc {
  id: string;
  name: string;
  description: string;
  attributes: Attribute[];
}

export const SCHEMAS: SchemaDoc[] = [
  { id: CORE_USER, name: 'User', description: 'A person of the box', attributes: USER_ATTRIBUTES },
  { id: ENTERPRISE_USER, name: 'EnterpriseUser', description: 'What an organisation knows of a person', attributes: ENTERPRISE_ATTRIBUTES },
  { id: CORE_GROUP, name: 'Group', description: 'A group of the box', attributes: GROUP_ATTRIBUTES },
];

export type ResourceKind = 'User' | 'Group';

/** A resource type: its core schema and its extensions. */
export interface ResourceType {
  kind: ResourceKind;
  endpoint: string;
  core: SchemaDoc;
  extensions: SchemaDoc[];
}

export const RESOURCE_TYPES: Record<ResourceKind, ResourceType> = {
  User: { kind: 'User', endpoint: '/Users', core: SCHEMAS[0]!, extensions: [SCHEMAS[1]!] },
  Group: { kind: 'Group', endpoint: '/Groups', core: SCHEMAS[2]!, extensions: [] },
};

/** Attributes every resource has (RFC 7643 §3.1), outside the schemas' lists. */
export const COMMON: Attribute[] = [
  attr('id', 'The id the box gives the resource.', { caseExact: true, mutability: 'readOnly', returned: 'always', uniqueness: 'server' }),
  attr('externalId', "The directory's own id of the resource.", { caseExact: true }),
  attr('meta', 'What the box says of the resource.', {
    type: 'complex',
    mutability: 'readOnly',
    subAttributes: [
      attr('resourceType', 'User or Group.', { mutability: 'readOnly', caseExact: true }),
      attr('created', 'When it was made.', { type: 'dateTime', mutability: 'readOnly' }),
      attr('lastModified', 'When it last changed.', { type: 'dateTime', mutability: 'readOnly' }),
      attr('location', 'Its URI.', { type: 'reference', mutability: 'readOnly', caseExact: true }),
      attr('version', 'Its ETag.', { mutability: 'readOnly', caseExact: true }),
    ],
  }),
];

export const lookup = (list: readonly Attribute[] | undefined, name: string): Attribute | undefined =>
  list?.find((a) => a.name.toLowerCase() === name.toLowerCase());

/** The schema a URN names among a resource type's (any case, RFC 7643 §2.1), or undefined. */
export function schemaOf(type: ResourceType, urn: string): SchemaDoc | undefined {
  return [type.core, ...type.extensions].find((s) => s.id.toLowerCase() === urn.toLowerCase());
}

/**
 * What the box offers (RFC 7643 §5): PATCH, filters, ETags and password changes; no bulk, no sorting.
 * `base` is the SCIM door's address; `boxUrl` the box's, which serves its own guide (api/http/routes/admin.ts).
 */
export function serviceProviderConfig(base: string, boxUrl: string, maxResults: number): Record<string, unknown> {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: `${boxUrl.replace(/\/$/, '')}/docs/guides/scim.md`,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults },
    changePassword: { supported: true },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description: 'An access token of a client an AccessPolicy allows on the SCIM door (resource/type "scim").',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

export function resourceTypeDoc(base: string, type: ResourceType): Record<string, unknown> {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
    id: type.kind,
    name: type.kind,
    endpoint: type.endpoint,
    description: type.core.description,
    schema: type.core.id,
    schemaExtensions: type.extensions.map((e) => ({ schema: e.id, required: false })),
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/${type.kind}` },
  };
}

export function schemaDoc(base: string, schema: SchemaDoc): Record<string, unknown> {
  return {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    ...schema,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${schema.id}` },
  };
}
