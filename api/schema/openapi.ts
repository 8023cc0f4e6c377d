// The OpenAPI 3.1 document of the box's HTTP API, served at GET /openapi.json.
// Resource bodies come from the same schemas that validate them (the CRDs,
// through restSchema); users and groups from the limits api/schema/people.ts
// checks; the OAuth and OpenID Connect endpoints as their RFCs define them.
// test/unit/schema/openapi.test.ts checks it with an OpenAPI validator no one
// here wrote, and that every path the box serves is in it.
import { DATA_MAX, DESCRIPTION_MAX, EMAIL_MAX, NAME_MAX } from './people.js';
import { PASSWORD_MAX } from './password-policy.js';
import { PASSWORD_MIN_LENGTH } from '../config.js';
import { FACTOR_KIND_NAMES } from '../factor-kinds.js';
import { RESOURCE_KINDS, TRAIL_KINDS, type ResourceKind } from '../record-kinds.js';
import { restSchema } from './resources.js';

type Json = Record<string, unknown>;

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: Json): Json => ({ 'application/json': { schema }, 'application/yaml': { schema } });
const form = (schema: Json): Json => ({ 'application/x-www-form-urlencoded': { schema }, 'application/json': { schema } });
const answer = (description: string, schema?: Json): Json => ({ description, ...(schema ? { content: json(schema) } : {}) });
const ERRORS = {
  '400': { $ref: '#/components/responses/BadRequest' },
  '401': { $ref: '#/components/responses/Unauthorized' },
  '403': { $ref: '#/components/responses/Forbidden' },
} as const;
const idParam = (what: string, type: 'string' | 'integer' = 'string'): Json => ({
  name: 'id',
  in: 'path',
  required: true,
  description: `the ${what}'s id`,
  schema: { type },
});
const SEARCH = [
  { name: '_count', in: 'query', description: 'page size (at most 1000)', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
  { name: '_page', in: 'query', description: 'page number, from 1', schema: { type: 'integer', minimum: 1 } },
  { name: '_sort', in: 'query', description: 'field to sort by; -field for descending', schema: { type: 'string' } },
];

/** Search, read, create, replace and delete of a kind of the resource API. */
function resourcePaths(kind: ResourceKind): Json {
  const one = ref(kind);
  const body = { required: true, content: json(ref(`${kind}Body`)) };
  return {
    [`/${kind}`]: {
      get: {
        tags: ['resources'],
        summary: `Search ${kind} records`,
        parameters: [...SEARCH, { name: 'id', in: 'query', schema: { type: 'string' } }],
        responses: { '200': answer('a Bundle of the records found', bundleOf(one)), ...ERRORS },
      },
      post: {
        tags: ['resources'],
        summary: `Create a ${kind}`,
        requestBody: body,
        responses: {
          '201': answer('created', one),
          '409': { $ref: '#/components/responses/Conflict' },
          '422': { $ref: '#/components/responses/Invalid' },
          ...ERRORS,
        },
      },
    },
    [`/${kind}/{id}`]: {
      parameters: [idParam(kind)],
      get: { tags: ['resources'], summary: `Read a ${kind}`, responses: { '200': answer('the record', one), ...ERRORS, '404': NOT_FOUND } },
      put: {
        tags: ['resources'],
        summary: `Create or replace a ${kind}`,
        requestBody: body,
        responses: {
          '200': answer('replaced', one),
          '201': answer('created', one),
          '409': { $ref: '#/components/responses/Conflict' },
          '422': { $ref: '#/components/responses/Invalid' },
          ...ERRORS,
        },
      },
      delete: {
        tags: ['resources'],
        summary: `Delete a ${kind}`,
        responses: { '200': answer('the deleted record', one), ...ERRORS, '404': NOT_FOUND },
      },
    },
  };
}

const NOT_FOUND = { $ref: '#/components/responses/NotFound' };
const bundleOf = (item: Json): Json => ({
  type: 'object',
  required: ['resourceType', 'type', 'total', 'entry'],
  properties: {
    resourceType: { const: 'Bundle' },
    type: { const: 'searchset' },
    total: { type: 'integer' },
    entry: { type: 'array', items: { type: 'object', properties: { resource: item } } },
  },
});

/** A record as the API shows it: the body's fields but the write-only ones (a secret), and meta. */
function recordSchema(kind: ResourceKind): { body: Json; record: Json } {
  const { schema } = restSchema(kind);
  const properties = { ...(schema.properties as Json) };
  const body = { ...schema, properties };
  const shown = Object.fromEntries(Object.entries(properties).filter(([, node]) => (node as Json).writeOnly !== true));
  const record = { ...schema, properties: { ...shown, meta: ref('Meta') }, required: [...((schema.required as string[]) ?? []), 'id'] };
  return { body, record };
}

const oauthError = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string' }, error_description: { type: 'string' } },
};

const tokenResponse = {
  type: 'object',
  required: ['access_token', 'token_type'],
  properties: {
    access_token: { type: 'string' },
    token_type: { const: 'Bearer' },
    expires_in: { type: 'integer' },
    refresh_token: { type: 'string' },
    id_token: { type: 'string' },
    scope: { type: 'string' },
  },
};

const oauthPaths: Json = {
  '/auth/token': {
    post: {
      tags: ['oauth'],
      summary: 'Token endpoint (RFC 6749 §3.2): client_credentials, authorization_code, refresh_token, device_code',
      security: [{}, { clientBasic: [] }],
      requestBody: {
        required: true,
        content: form({
          type: 'object',
          required: ['grant_type'],
          properties: {
            grant_type: {
              enum: ['client_credentials', 'authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
            },
            client_id: { type: 'string' },
            client_secret: { type: 'string' },
            client_assertion_type: { type: 'string' },
            client_assertion: {
              type: 'string',
              description:
                "a workload's ServiceAccount token (auth.workload), a client's own assertion (private_key_jwt), or a JWT-SVID (auth.spiffe)",
            },
            scope: { type: 'string' },
            audience: { type: 'string' },
            code: { type: 'string' },
            redirect_uri: { type: 'string' },
            code_verifier: { type: 'string' },
            refresh_token: { type: 'string' },
            device_code: { type: 'string' },
          },
        }),
      },
      responses: {
        '200': { description: 'the tokens', content: { 'application/json': { schema: tokenResponse } } },
        '400': { $ref: '#/components/responses/OAuthError' },
        '401': { $ref: '#/components/responses/OAuthError' },
        '429': { $ref: '#/components/responses/OAuthError' },
        '503': { $ref: '#/components/responses/OAuthError' },
      },
    },
  },
  '/auth/introspect': {
    post: {
      tags: ['oauth'],
      summary: 'Token introspection (RFC 7662)',
      security: [{ clientBasic: [] }, { bearer: [] }],
      requestBody: { required: true, content: form({ type: 'object', required: ['token'], properties: { token: { type: 'string' } } }) },
      responses: {
        '200': {
          description: 'active, and the claims of an active token',
          content: {
            'application/json': { schema: { type: 'object', required: ['active'], properties: { active: { type: 'boolean' } } } },
          },
        },
        '401': { $ref: '#/components/responses/OAuthError' },
      },
    },
  },
  '/auth/revoke': {
    post: {
      tags: ['oauth'],
      summary: 'Token revocation (RFC 7009): closes the session and its descendants',
      security: [{ clientBasic: [] }, {}],
      requestBody: { required: true, content: form({ type: 'object', required: ['token'], properties: { token: { type: 'string' } } }) },
      responses: { '200': { description: 'revoked, or not a token of this client' }, '401': { $ref: '#/components/responses/OAuthError' } },
    },
  },
  '/auth/device': {
    post: {
      tags: ['oauth'],
      summary: 'Device authorization (RFC 8628 §3.1)',
      requestBody: {
        required: true,
        content: form({
          type: 'object',
          required: ['client_id'],
          properties: { client_id: { type: 'string' }, scope: { type: 'string' } },
        }),
      },
      responses: {
        '200': {
          description: 'the codes',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['device_code', 'user_code', 'verification_uri', 'expires_in'],
                properties: {
                  device_code: { type: 'string' },
                  user_code: { type: 'string' },
                  verification_uri: { type: 'string' },
                  verification_uri_complete: { type: 'string' },
                  expires_in: { type: 'integer' },
                  interval: { type: 'integer' },
                },
              },
            },
          },
        },
        '400': { $ref: '#/components/responses/OAuthError' },
        '429': { $ref: '#/components/responses/OAuthError' },
      },
    },
  },
  '/auth/register': {
    post: {
      tags: ['oauth'],
      summary:
        "Dynamic client registration (RFC 7591), when BOXAUTH_DYNAMIC_REGISTRATION is on: a public agent's client that an AccessPolicy admits (docs/guides/agents.md)",
      security: [{}],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['redirect_uris'],
              properties: {
                redirect_uris: { type: 'array', items: { type: 'string' } },
                client_name: { type: 'string' },
                logo_uri: { type: 'string' },
                scope: { type: 'string' },
                token_endpoint_auth_method: { type: 'string', enum: ['none'] },
                grant_types: { type: 'array', items: { type: 'string', enum: ['authorization_code', 'refresh_token'] } },
                response_types: { type: 'array', items: { type: 'string', enum: ['code'] } },
              },
            },
          },
        },
      },
      responses: {
        '201': {
          description: 'the client registered: its client_id and the metadata the box keeps (RFC 7591 §3.2.1)',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['client_id', 'client_id_issued_at', 'redirect_uris', 'token_endpoint_auth_method'],
                properties: {
                  client_id: { type: 'string' },
                  client_id_issued_at: { type: 'integer' },
                  redirect_uris: { type: 'array', items: { type: 'string' } },
                  token_endpoint_auth_method: { type: 'string' },
                  grant_types: { type: 'array', items: { type: 'string' } },
                  response_types: { type: 'array', items: { type: 'string' } },
                  client_name: { type: 'string' },
                  logo_uri: { type: 'string' },
                  scope: { type: 'string' },
                },
              },
            },
          },
        },
        '400': { $ref: '#/components/responses/OAuthError' },
        '404': { $ref: '#/components/responses/OAuthError' },
        '413': { $ref: '#/components/responses/OAuthError' },
        '429': { $ref: '#/components/responses/OAuthError' },
      },
    },
  },
  '/auth/par': {
    post: {
      tags: ['oauth'],
      summary: 'Pushed authorization request (RFC 9126): the parameters of /auth/authorize, answered with a request_uri',
      security: [{ clientBasic: [] }, {}],
      requestBody: {
        required: true,
        content: form({
          type: 'object',
          required: ['client_id', 'response_type'],
          properties: {
            client_id: { type: 'string' },
            response_type: { type: 'string' },
            redirect_uri: { type: 'string' },
            scope: { type: 'string' },
            state: { type: 'string' },
            code_challenge: { type: 'string' },
            code_challenge_method: { type: 'string' },
          },
        }),
      },
      responses: {
        '201': {
          description: 'the request_uri to send the browser to /auth/authorize with, and its lifetime in seconds',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['request_uri', 'expires_in'],
                properties: { request_uri: { type: 'string' }, expires_in: { type: 'integer' } },
              },
            },
          },
        },
        '400': { $ref: '#/components/responses/OAuthError' },
        '401': { $ref: '#/components/responses/OAuthError' },
        '413': { $ref: '#/components/responses/OAuthError' },
        '429': { $ref: '#/components/responses/OAuthError' },
      },
    },
  },
  '/auth/authorize': {
    get: {
      tags: ['oauth'],
      summary: 'Authorization endpoint (RFC 6749 §3.1, OpenID Connect Core §3.1.2): a browser route',
      parameters: [
        'response_type',
        'client_id',
        'redirect_uri',
        'scope',
        'state',
        'nonce',
        'code_challenge',
        'code_challenge_method',
        'prompt',
        'max_age',
        'id_token_hint',
        'login_hint',
        'claims',
        'resource',
        'request',
        'request_uri',
      ].map((name) => ({
        name,
        in: 'query',
        // with request_uri (RFC 9126 §4), the rest comes from the pushed request; with request (RFC 9101), from the object
        required: name === 'client_id',
        schema: { type: 'string' },
      })),
      responses: {
        '302': { description: 'back to the client with a code, tokens or an error; or to the sign-in page' },
        '400': { description: 'an HTML page: the request cannot be answered at the client' },
      },
    },
    post: {
      tags: ['oauth'],
      summary: 'The authorization endpoint with its parameters as a form (OpenID Connect Core §3.1.2.1)',
      requestBody: { content: { 'application/x-www-form-urlencoded': { schema: { type: 'object' } } } },
      responses: { '302': { description: 'as GET' } },
    },
  },
  '/auth/userinfo': {
    get: {
      tags: ['openid'],
      summary: 'UserInfo (OpenID Connect Core §5.3)',
      security: [{ bearer: [] }],
      responses: {
        '200': {
          description: 'the claims of the scopes granted',
          content: { 'application/json': { schema: { type: 'object', required: ['sub'] } } },
        },
        '401': { description: 'WWW-Authenticate: Bearer error="invalid_token"' },
      },
    },
  },
  '/auth/logout': {
    get: {
      tags: ['openid'],
      summary: 'RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0): a browser route',
      parameters: ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state', 'logout_hint'].map((name) => ({
        name,
        in: 'query',
        schema: { type: 'string' },
      })),
      responses: { '200': { description: 'an HTML page' }, '302': { description: 'to post_logout_redirect_uri' } },
    },
  },
  '/.well-known/openid-configuration': {
    get: {
      tags: ['openid'],
      summary: 'OpenID Provider metadata (OpenID Connect Discovery 1.0)',
      responses: { '200': { description: 'the metadata' } },
    },
  },
  '/.well-known/oauth-authorization-server': {
    get: { tags: ['oauth'], summary: 'Authorization server metadata (RFC 8414)', responses: { '200': { description: 'the metadata' } } },
  },
  '/.well-known/jwks.json': {
    get: { tags: ['oauth'], summary: 'The public signing keys (RFC 7517)', responses: { '200': { description: 'a JWK Set' } } },
  },
  '/auth/saml/metadata': {
    get: {
      tags: ['saml'],
      summary: "The box's SAML 2.0 IdP metadata, signed: its entity ID, certificates, SSO and SLO endpoints (docs/guides/saml-apps.md)",
      security: [],
      responses: { '200': { description: 'an md:EntityDescriptor (application/samlmetadata+xml)' } },
    },
  },
};

export function peopleSchemas(): Json {
  const groupIds = { type: 'array', items: { type: 'integer', minimum: 1 } };
  const requireSecondFactor = { type: 'boolean', default: false, description: 'members enrol a second factor at their next sign-in' };
  return {
    UserBody: {
      type: 'object',
      additionalProperties: false,
      properties: {
        email: { type: 'string', maxLength: EMAIL_MAX, format: 'email' },
        email_verified: { type: 'boolean' },
        active: { type: 'boolean', description: 'false turns the person off: what they obtained ends, no sign-in until true again' },
        password: {
          type: 'string',
          minLength: PASSWORD_MIN_LENGTH.least,
          maxLength: PASSWORD_MAX,
          writeOnly: true,
          description:
            "at least the box's BOXAUTH_PASSWORD_MIN_LENGTH characters (8 by default), not one of the most used passwords, " +
            "not too much like the email address or the box's name, not repeated or sequential characters; a 422 says which",
        },
        data: { type: ['string', 'null'], maxLength: DATA_MAX, description: 'any JSON, as a string' },
        'group-ids': groupIds,
      },
    },
    User: {
      type: 'object',
      required: ['id', 'email'],
      properties: {
        id: { type: 'integer' },
        email: { type: 'string' },
        email_verified: {
          type: 'boolean',
          description: 'the address is proven: by its link, or an administrator vouching (true on a write)',
        },
        must_verify_email: {
          type: 'boolean',
          description: 'they signed up where a verified address comes first: no sign-in until it is (vouching clears it)',
        },
        active: {
          type: 'boolean',
          description: 'false: turned off (SCIM active=false, or a write of false): what they obtained ended, no sign-in until true again',
        },
        data: { type: ['string', 'null'] },
        'group-ids': groupIds,
        scim: {
          type: ['object', 'null'],
          readOnly: true,
          description:
            "one person's record only: what their directory (SCIM) wrote that the box has no field for (externalId, name, " +
            'displayName, …), null when no directory wrote them; written through SCIM alone (ignored in a write here)',
        },
        created_at: { type: 'string', format: 'date-time' },
        updated_at: { type: 'string', format: 'date-time' },
      },
    },
    GroupBody: {
      type: 'object',
      additionalProperties: false,
      properties: {
        name: { type: 'string', maxLength: NAME_MAX },
        description: { type: ['string', 'null'], maxLength: DESCRIPTION_MAX },
        require_second_factor: requireSecondFactor,
      },
    },
    Group: {
      type: 'object',
      required: ['id', 'name'],
      properties: {
        id: { type: 'integer' },
        name: { type: 'string' },
        description: { type: ['string', 'null'] },
        require_second_factor: requireSecondFactor,
        created_at: { type: 'string', format: 'date-time' },
      },
    },
    Factors: {
      type: 'object',
      description: "A person's second factors as an administrator sees them: never a key or secret",
      required: ['factors', 'recovery_codes_left', 'must_enrol', 'group_requires'],
      properties: {
        factors: {
          type: 'array',
          items: {
            type: 'object',
            required: ['id', 'kind', 'name', 'created_at'],
            properties: {
              id: { type: 'integer' },
              kind: { enum: FACTOR_KIND_NAMES },
              name: { type: 'string' },
              created_at: { type: 'string', format: 'date-time' },
              last_used_at: { type: ['string', 'null'], format: 'date-time' },
              device_type: {
                enum: ['singleDevice', 'multiDevice', null],
                description: 'a passkey synced between devices, or bound to one',
              },
            },
          },
        },
        recovery_codes_left: { type: 'integer', minimum: 0 },
        must_enrol: { type: 'boolean', description: 'their factors were reset: they enrol one at their next sign-in' },
        group_requires: { type: 'boolean', description: 'a group of theirs requires a second factor' },
      },
    },
  };
}

/**
 * SCIM 2.0 (RFC 7644, docs/guides/scim.md): the same people and groups for a directory. Its
 * resources are described by the door's own discovery documents (/scim/v2/Schemas); here, its paths.
 */
function scimPaths(): Json {
  const scimJson = (description: string): Json => ({
    description,
    content: { 'application/scim+json': { schema: { type: 'object', description: 'RFC 7643/7644 JSON' } } },
  });
  const refused = {
    '400': scimJson('an RFC 7644 §3.12 error (scimType)'),
    '401': scimJson('no token'),
    '403': scimJson('no policy allows it'),
  };
  const body = { required: true, content: { 'application/scim+json': { schema: { type: 'object' } } } };
  const read = (summary: string): Json => ({ tags: ['scim'], summary, responses: { '200': scimJson('found'), ...refused } });
  const paths: Json = {
    '/scim/v2/ServiceProviderConfig': { get: read('What the SCIM door supports (RFC 7643 §5)') },
    '/scim/v2/ResourceTypes': { get: read('User and Group (RFC 7643 §6)') },
    '/scim/v2/ResourceTypes/{id}': { parameters: [idParam('resource type')], get: read('One resource type') },
    '/scim/v2/Schemas': { get: read('The schemas: User, the enterprise extension, Group (RFC 7643 §7)') },
    '/scim/v2/Schemas/{id}': { parameters: [idParam('schema')], get: read('One schema, by its URN') },
  };
  for (const [plural, one] of [
    ['Users', 'person'],
    ['Groups', 'group'],
  ] as const) {
    paths[`/scim/v2/${plural}`] = {
      get: read(`Search ${plural} (filter, startIndex, count, attributes, excludedAttributes)`),
      post: { tags: ['scim'], summary: `Create a ${one}`, requestBody: body, responses: { '201': scimJson('created'), ...refused } },
    };
    paths[`/scim/v2/${plural}/.search`] = {
      post: {
        tags: ['scim'],
        summary: `Search ${plural} with a SearchRequest body`,
        requestBody: body,
        responses: { '200': scimJson('found'), ...refused },
      },
    };
    paths[`/scim/v2/${plural}/{id}`] = {
      parameters: [idParam(one)],
      get: read(`Read a ${one}`),
      put: {
        tags: ['scim'],
        summary: `Replace a ${one} (If-Match: its version)`,
        requestBody: body,
        responses: { '200': scimJson('replaced'), ...refused },
      },
      patch: {
        tags: ['scim'],
        summary: `Change a ${one} with PatchOp operations`,
        requestBody: body,
        responses: { '200': scimJson('changed'), ...refused },
      },
      delete: { tags: ['scim'], summary: `Delete a ${one}`, responses: { '204': { description: 'deleted' }, ...refused } },
    };
  }
  return paths;
}

/** A person's factors, and an administrator's reset of them. */
const factorPaths: Json = {
  '/users/{id}/factors': {
    parameters: [idParam('user', 'integer')],
    get: {
      tags: ['people'],
      summary: "A person's second factors (their summaries), recovery codes left, and whether they must enrol one",
      responses: { '200': answer('found', ref('Factors')), ...ERRORS, '404': NOT_FOUND },
    },
  },
  '/users/{id}/factors/reset': {
    parameters: [idParam('user', 'integer')],
    post: {
      tags: ['people'],
      summary:
        'Reset the second factors: removes every factor and recovery code, makes the person enrol one at their next sign-in, ' +
        'and ends their signed-in browsers, codes and tokens',
      responses: { '200': answer('reset', ref('Factors')), ...ERRORS, '404': NOT_FOUND },
    },
  },
};

/** A signed-in browser and a grant to an app, as an administrator sees them (`user`, `email`: in the box-wide lists). */
function sessionSchemas(): Json {
  const person = { user: { type: 'integer' }, email: { type: 'string' } };
  const amr = { type: 'array', items: { type: 'string' }, description: 'what the sign-in proved (RFC 8176): pwd, otp, hwk, mfa…' };
  const address = { type: ['string', 'null'], description: 'where the browser signed in from' };
  return {
    AuditEvent: {
      type: 'object',
      required: ['resourceType', 'id', 'at', 'event', 'outcome', 'actor', 'detail'],
      properties: {
        resourceType: { const: 'AuditEvent' },
        id: { type: 'string', description: 'its place in the trail (newer events have greater ids)' },
        at: { type: 'string', format: 'date-time' },
        event: { type: 'string' },
        action: { type: ['string', 'null'] },
        outcome: { type: 'string', enum: ['success', 'failure'] },
        actor: {
          type: 'object',
          description: 'who called: the token behind the request (an AuthZEN PEP, never the subject it named), or a person signing in',
          properties: { client: { type: ['string', 'null'] }, user: { type: ['string', 'null'] }, session: { type: ['string', 'null'] } },
        },
        user: { type: ['string', 'null'], description: 'the person the event concerns' },
        client: { type: ['string', 'null'] },
        subject: {
          type: ['object', 'null'],
          description:
            'whom a refused decision was about: the caller at a gate (the actor too), or the subject an AuthZEN PEP named (the actor is the PEP); null for other events',
          properties: { client: { type: ['string', 'null'] }, user: { type: ['string', 'null'] } },
        },
        resource: { type: ['object', 'null'], properties: { type: { type: 'string' }, id: { type: 'string' } } },
        detail: { type: 'object', description: 'the event as its log line has it (docs/operations/audit.md); never a secret' },
      },
    },
    AuditEventBundle: {
      type: 'object',
      required: ['resourceType', 'type', 'entry', 'link'],
      properties: {
        resourceType: { const: 'Bundle' },
        type: { const: 'searchset' },
        entry: { type: 'array', items: { type: 'object', properties: { resource: ref('AuditEvent') } } },
        link: {
          type: 'array',
          items: { type: 'object', properties: { relation: { type: 'string' }, url: { type: 'string' } } },
          description: 'relation next: the next page, while there may be one',
        },
        last: { type: 'string', description: 'with _after: the id to follow on from' },
      },
    },
    SignIn: {
      type: 'object',
      required: ['sid', 'since', 'expires_at', 'amr', 'address', 'user_agent'],
      properties: {
        sid: { type: 'string', format: 'uuid', description: "the browser session's id (the ID tokens' sid)" },
        ...person,
        since: { type: 'string', format: 'date-time' },
        expires_at: { type: 'string', format: 'date-time' },
        amr,
        address,
        user_agent: { type: ['string', 'null'] },
      },
    },
    Grant: {
      type: 'object',
      required: ['id', 'client', 'since', 'last_used', 'scope', 'amr', 'sid', 'address'],
      properties: {
        id: { type: 'string', format: 'uuid', description: "the grant's family: its first session and those refreshed from it" },
        ...person,
        client: { type: 'string' },
        since: { type: 'string', format: 'date-time' },
        last_used: { type: 'string', format: 'date-time', description: 'when it was last refreshed' },
        scope: { type: ['string', 'null'] },
        amr,
        sid: { type: ['string', 'null'], description: 'the signed-in browser it came through, while that is signed in' },
        address,
      },
    },
    Identity: {
      type: 'object',
      description: 'An identity at an IdentityProvider linked to the person',
      required: ['provider', 'subject', 'linked_at', 'last_used_at'],
      properties: {
        provider: { type: 'string', description: 'the IdentityProvider' },
        subject: { type: 'string', description: "the person's id there (sub, GitHub's id, the directory's entryUUID)" },
        email: { type: ['string', 'null'], description: 'the address it gave at its last sign-in' },
        linked_at: { type: 'string', format: 'date-time' },
        last_used_at: { type: 'string', format: 'date-time' },
      },
    },
    PersonSessions: {
      type: 'object',
      required: ['browsers', 'grants'],
      properties: { browsers: { type: 'array', items: ref('SignIn') }, grants: { type: 'array', items: ref('Grant') } },
    },
  };
}

const uuidPath = (name: string, description: string): Json => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', format: 'uuid' },
});
const ENDED = { description: 'ended' };
const PAGING = SEARCH.filter((p) => p.name !== '_sort');
const EMAIL_PART = {
  name: 'q',
  in: 'query',
  description: "part of the person's email (case-insensitive)",
  schema: { type: 'string', maxLength: EMAIL_MAX },
};
const TOTAL = { headers: { 'X-Total-Count': { description: 'how many match, on every page', schema: { type: 'integer' } } } };

/** People's sessions: one person's, ended all at once, by browser or by grant; the box's lists. */
const personSessionPaths: Json = {
  '/users/{id}/sessions': {
    parameters: [idParam('user', 'integer')],
    get: {
      tags: ['people'],
      summary: "A person's signed-in browsers and grants to apps: since when, from where, which factors, which client",
      responses: { '200': answer('found', ref('PersonSessions')), ...ERRORS, '404': NOT_FOUND },
    },
    delete: {
      tags: ['people'],
      summary: 'End everything the person obtained: signed-in browsers, sign-ins half made, pending codes and every grant',
      responses: { '204': ENDED, ...ERRORS, '404': NOT_FOUND },
    },
  },
  '/users/{id}/sessions/{sid}': {
    parameters: [idParam('user', 'integer'), uuidPath('sid', 'the signed-in browser')],
    delete: {
      tags: ['people'],
      summary: 'Sign one browser of the person out, ending what was issued through it (404 unless it is theirs)',
      responses: { '204': ENDED, ...ERRORS, '404': NOT_FOUND },
    },
  },
  '/users/{id}/identities': {
    parameters: [idParam('user', 'integer')],
    get: {
      tags: ['people'],
      summary: "The person's identities at IdentityProviders: which provider, their subject there, since when",
      responses: { '200': answer('found', { type: 'array', items: ref('Identity') }), ...ERRORS, '404': NOT_FOUND },
    },
  },
  '/users/{id}/identities/{provider}': {
    parameters: [
      idParam('user', 'integer'),
      { name: 'provider', in: 'path', required: true, description: 'the IdentityProvider', schema: { type: 'string' } },
    ],
    delete: {
      tags: ['people'],
      summary:
        "Unlink the person's identity at the provider (audited; it no longer reaches them by email). Unlike the person's own unlink, even their only way in",
      responses: { '204': ENDED, ...ERRORS, '404': NOT_FOUND },
    },
  },
  '/users/{id}/grants/{family}': {
    parameters: [idParam('user', 'integer'), uuidPath('family', "the grant's id (its family)")],
    delete: {
      tags: ['people'],
      summary: 'End one grant of the person to an app: its access and refresh tokens (404 unless it is theirs and open)',
      responses: { '204': ENDED, ...ERRORS, '404': NOT_FOUND },
    },
  },
  '/grants': {
    get: {
      tags: ['people'],
      summary: "The box's live grants to people, newest first: who, which client, since when, which factors, from where",
      parameters: [
        ...PAGING,
        EMAIL_PART,
        { name: 'client', in: 'query', description: 'only grants to this client', schema: { type: 'string' } },
      ],
      responses: { '200': { ...answer('the grants', { type: 'array', items: ref('Grant') }), ...TOTAL }, ...ERRORS },
    },
  },
  '/AuditEvent': {
    get: {
      tags: ['audit'],
      summary:
        'The audit trail, newest first: who did what to which record, sign-ins, closes, refused decisions. Only the events whose every named record the token may read',
      parameters: [
        ...(
          [
            ['actor', "who acted: a person's id or a client's id"],
            ['user', 'the person the event concerns (their id)'],
            ['client', 'the client the event concerns'],
            ['resource_type', `the kind of record: ${TRAIL_KINDS.join(', ')}`],
            ['resource_id', "the record's id"],
            ['event', 'sign_in, session_closed, decision, factor, upstream, account, record_changed, api_refused, left_out'],
          ] as const
        ).map(([name, description]) => ({ name, in: 'query', description, schema: { type: 'string' } })),
        { name: 'outcome', in: 'query', description: 'success or failure', schema: { type: 'string', enum: ['success', 'failure'] } },
        { name: 'since', in: 'query', description: 'events at or after this time (ISO 8601)', schema: { type: 'string' } },
        { name: 'until', in: 'query', description: 'events before this time (ISO 8601)', schema: { type: 'string' } },
        {
          name: '_count',
          in: 'query',
          description: 'events per page (1–1000, default 100)',
          schema: { type: 'integer', minimum: 1, maximum: 1000 },
        },
        {
          name: '_cursor',
          in: 'query',
          description: 'the next page: events older than this id (the link `next` gives it)',
          schema: { type: 'string' },
        },
        {
          name: '_after',
          in: 'query',
          description: 'following the trail: events newer than this id, oldest first',
          schema: { type: 'string' },
        },
      ],
      responses: { '200': answer('the events', ref('AuditEventBundle')), ...ERRORS },
    },
  },
  '/sign-ins': {
    get: {
      tags: ['people'],
      summary: "The box's signed-in browsers, newest first",
      parameters: [...PAGING, EMAIL_PART],
      responses: { '200': { ...answer('the signed-in browsers', { type: 'array', items: ref('SignIn') }), ...TOTAL }, ...ERRORS },
    },
  },
};

function peoplePaths(kind: 'users' | 'groups', one: string): Json {
  const body = { required: true, content: json(ref(`${one}Body`)) };
  return {
    [`/${kind}`]: {
      get: {
        tags: ['people'],
        summary: `List or search ${kind}`,
        parameters: SEARCH,
        responses: { '200': answer(`the ${kind}`, { type: 'array', items: ref(one) }), ...ERRORS },
      },
      post: {
        tags: ['people'],
        summary: `Create a ${one.toLowerCase()}`,
        requestBody: body,
        responses: {
          '201': answer('created', ref(one)),
          '409': { $ref: '#/components/responses/Conflict' },
          '422': { $ref: '#/components/responses/Invalid' },
          ...ERRORS,
        },
      },
    },
    [`/${kind}/{id}`]: {
      parameters: [idParam(one.toLowerCase(), 'integer')],
      get: {
        tags: ['people'],
        summary: `Read a ${one.toLowerCase()}`,
        responses: { '200': answer('found', ref(one)), ...ERRORS, '404': NOT_FOUND },
      },
      put: {
        tags: ['people'],
        summary: `Change a ${one.toLowerCase()}`,
        requestBody: body,
        responses: { '200': answer('changed', ref(one)), '422': { $ref: '#/components/responses/Invalid' }, ...ERRORS, '404': NOT_FOUND },
      },
      delete: {
        tags: ['people'],
        summary: `Delete a ${one.toLowerCase()}`,
        responses: { '200': answer('deleted', ref(one)), ...ERRORS, '404': NOT_FOUND },
      },
    },
  };
}

const sessionSchema = {
  type: 'object',
  required: ['resourceType', 'id', 'type', 'client', 'start', 'active'],
  properties: {
    resourceType: { const: 'Session' },
    id: { type: 'string' },
    type: { type: 'string' },
    client: ref('Reference'),
    user: ref('Reference'),
    parent: ref('Reference'),
    audience: { type: 'string' },
    scope: { type: 'string' },
    start: { type: 'string', format: 'date-time' },
    exp: { type: 'string', format: 'date-time' },
    refresh_token_exp: { type: 'string', format: 'date-time' },
    end: { type: 'string', format: 'date-time' },
    active: { type: 'boolean' },
    details: { type: 'object' },
  },
};

const decisionPaths: Json = {
  '/authz/forward-auth': {
    get: {
      tags: ['decisions'],
      summary: 'Forward-auth for NGINX auth_request, Caddy forward_auth, Traefik forwardAuth: the App is found by the forwarded URL',
      responses: {
        '200': { description: 'allowed; identity headers for the app' },
        '302': { description: 'to sign in (browsers)' },
        '401': { description: 'no credential' },
        '403': { description: 'denied' },
      },
    },
  },
  '/authz/forward-auth/{app}': {
    parameters: [{ name: 'app', in: 'path', required: true, schema: { type: 'string' } }],
    get: {
      tags: ['decisions'],
      summary: 'Forward-auth for one App',
      responses: { '200': { description: 'allowed' }, '401': { description: 'no credential' }, '403': { description: 'denied' } },
    },
  },
  '/authz/http/{app}/{path}': {
    parameters: [
      { name: 'app', in: 'path', required: true, schema: { type: 'string' } },
      {
        name: 'path',
        in: 'path',
        required: true,
        description: 'the original path of the request, of any depth',
        schema: { type: 'string' },
      },
    ],
    post: {
      tags: ['decisions'],
      summary:
        "Envoy's ext_authz HTTP service (path_prefix /authz/http/<app>), any method: the original request's method, path and headers",
      security: [],
      responses: {
        '200': { description: 'allowed; identity headers for the app' },
        '401': { description: 'no credential' },
        '403': { description: 'denied' },
      },
    },
  },
  '/authz/decisions': {
    get: {
      tags: ['decisions'],
      summary: "An App's newest kept refusals, newest first (a policy can grant one App's: params.app)",
      parameters: [
        { name: 'app', in: 'query', required: true, description: "the App's id", schema: { type: 'string' } },
        {
          name: '_count',
          in: 'query',
          description: 'how many (20 unless given, at most 100)',
          schema: { type: 'integer', minimum: 1, maximum: 100 },
        },
      ],
      responses: { '200': { description: '[{id, app, at, status, reason}], newest first' }, ...ERRORS },
    },
  },
  '/authz/decisions/{id}': {
    parameters: [idParam('decision')],
    get: {
      tags: ['decisions'],
      summary: 'Explain a refused decision by its id (with app=<id>: only a decision of that App)',
      parameters: [{ name: 'app', in: 'query', description: 'answer 404 unless the decision is of this App', schema: { type: 'string' } }],
      responses: { '200': { description: 'each policy and what it said' }, ...ERRORS, '404': NOT_FOUND },
    },
  },
  '/authz/explain': {
    post: {
      tags: ['decisions'],
      summary: "Replay a request against an App's policies",
      responses: { '200': { description: 'the decision, explained' }, ...ERRORS },
    },
  },
  '/apps/{app}/access/v1/evaluation': {
    parameters: [{ name: 'app', in: 'path', required: true, schema: { type: 'string' } }],
    post: {
      tags: ['decisions'],
      summary: 'AuthZEN Authorization API 1.0: one evaluation (docs/guides/guard-your-apps.md)',
      security: [{ bearer: [] }],
      responses: {
        '200': {
          description: '{"decision": true} or {"decision": false, "context": {"reason": <why>}}; the decision id in X-Boxauth-Decision',
        },
        ...ERRORS,
        '404': NOT_FOUND,
      },
    },
  },
  '/apps/{app}/access/v1/evaluations': {
    parameters: [{ name: 'app', in: 'path', required: true, schema: { type: 'string' } }],
    post: {
      tags: ['decisions'],
      summary: 'AuthZEN Authorization API 1.0: several evaluations, with defaults and options.evaluations_semantic',
      security: [{ bearer: [] }],
      responses: {
        '200': {
          description:
            '{"evaluations": [<a decision, or {"decision": false, "context": {"error": {"status", "message"}}}>, ...]}; without evaluations, one decision; the decision ids in X-Boxauth-Decision, in order',
        },
        ...ERRORS,
        '404': NOT_FOUND,
      },
    },
  },
  ...Object.fromEntries(
    (['subject', 'resource', 'action'] as const).map((kind) => [
      `/apps/{app}/access/v1/search/${kind}`,
      {
        parameters: [{ name: 'app', in: 'path', required: true, schema: { type: 'string' } }],
        post: {
          tags: ['decisions'],
          summary: `AuthZEN Authorization API 1.0: ${kind[0]!.toUpperCase()}${kind.slice(1)} Search (docs/guides/guard-your-apps.md)`,
          security: [{ bearer: [] }],
          responses: {
            '200': { description: '{"page": {"next_token": <empty on the last page>}, "results": [...]}' },
            ...ERRORS,
            '404': NOT_FOUND,
          },
        },
      },
    ]),
  ),
  '/.well-known/oauth-protected-resource': {
    get: {
      tags: ['decisions'],
      summary:
        "Protected Resource Metadata (RFC 9728) of the App whose url the request's Host names, at its audience's path: <app origin>/.well-known/oauth-protected-resource<audience path>; on the box's own host, the box's",
      security: [],
      responses: {
        '200': {
          description:
            '{"resource", "authorization_servers", "scopes_supported", "bearer_methods_supported", "resource_name", "dpop_signing_alg_values_supported"}',
        },
        '404': NOT_FOUND,
      },
    },
  },
  '/.well-known/authzen-configuration/apps/{app}': {
    parameters: [{ name: 'app', in: 'path', required: true, schema: { type: 'string' } }],
    get: {
      tags: ['decisions'],
      summary:
        'AuthZEN metadata of the decision point <base url>/apps/{app}; with a base url that has a path, at <origin>/.well-known/authzen-configuration/<that path>/apps/{app}',
      security: [],
      responses: {
        '200': {
          description:
            '{"policy_decision_point", "access_evaluation_endpoint", "access_evaluations_endpoint", "search_subject_endpoint", "search_resource_endpoint", "search_action_endpoint"}',
        },
        '404': NOT_FOUND,
      },
    },
  },
};

/** The box itself: its signing keys and its effective settings (api/http/routes/keys.ts, settings.ts). */
/** GET and PUT /settings/notices (api/notices/allow-list.ts NoticeSettings). */
const NOTICE_SETTINGS: Json = {
  type: 'object',
  required: ['allowed_addresses', 'allowed_addresses_from_environment'],
  properties: {
    allowed_addresses: { type: 'array', items: { type: 'string' }, description: 'CIDRs written at runtime' },
    allowed_addresses_from_environment: { type: 'array', items: { type: 'string' }, description: 'BOXAUTH_NOTICE_ALLOWED_ADDRESSES' },
  },
};

const boxPaths: Json = {
  '/keys': {
    get: {
      tags: ['box'],
      summary: 'The signing keys: which signs, which are retired and until when they stay published (never a private key)',
      responses: {
        '200': answer('every stored key, newest first', {
          type: 'object',
          properties: { keys: { type: 'array', items: ref('SigningKey') } },
        }),
        ...ERRORS,
      },
    },
  },
  '/keys/rotate': {
    post: {
      tags: ['box'],
      summary: 'A new key signs from now on; the key it replaces is retired and stays published while tokens it signed may live',
      requestBody: {
        required: false,
        content: json({
          type: 'object',
          additionalProperties: false,
          properties: { alg: { type: 'string', enum: ['ES256', 'RS256', 'EdDSA'], description: "default: the access tokens' algorithm" } },
        }),
      },
      responses: {
        '200': answer('the rotation and every key after it', {
          type: 'object',
          properties: {
            rotated: {
              type: 'object',
              properties: { alg: { type: 'string' }, kid: { type: 'string' }, retired: { type: 'array', items: { type: 'string' } } },
            },
            keys: { type: 'array', items: ref('SigningKey') },
          },
        }),
        '409': { description: "the algorithm's key is BOXAUTH_SIGNING_KEY's, which the box does not replace", content: json(ref('Error')) },
        '422': { $ref: '#/components/responses/Invalid' },
        ...ERRORS,
      },
    },
  },
  '/settings': {
    get: {
      tags: ['box'],
      summary: "The box's effective configuration, as an administrator needs it (an allow-list: never a secret)",
      responses: { '200': answer('the settings, by topic (docs/reference/rest-api.md#settings)', { type: 'object' }), ...ERRORS },
    },
  },
  '/settings/notices': {
    get: {
      tags: ['box'],
      summary: "The ranges a receiver of notices may be at although special-use or the box's own (docs/operations/notices.md)",
      responses: { '200': answer('the allow-list', NOTICE_SETTINGS), ...ERRORS },
    },
    put: {
      tags: ['box'],
      summary: 'Replaces the ranges written at runtime; every process of the box holds to them at its next send',
      requestBody: {
        required: true,
        content: json({
          type: 'object',
          required: ['allowed_addresses'],
          properties: {
            allowed_addresses: { type: 'array', maxItems: 100, items: { type: 'string', description: 'an IP address or CIDR' } },
          },
        }),
      },
      responses: { '200': answer('the allow-list', NOTICE_SETTINGS), ...ERRORS },
    },
  },
};

const signingKeySchema: Json = {
  type: 'object',
  required: ['kid', 'alg', 'use', 'state', 'signs', 'external', 'created_at', 'retired_at', 'rotates_at', 'published_until'],
  properties: {
    kid: { type: 'string', description: 'the JWK key id (its RFC 7638 thumbprint)' },
    alg: { type: 'string', enum: ['ES256', 'RS256', 'EdDSA'] },
    use: { type: 'string', const: 'sig' },
    state: { type: 'string', enum: ['active', 'retired'], description: 'active: signs and is published; retired: only published' },
    signs: { type: 'array', items: { type: 'string', enum: ['access_token', 'id_token'] } },
    external: { type: 'boolean', description: 'given by BOXAUTH_SIGNING_KEY' },
    created_at: { type: 'string', format: 'date-time' },
    retired_at: { type: ['string', 'null'], format: 'date-time' },
    rotates_at: { type: ['string', 'null'], format: 'date-time', description: 'when an active generated key is due for replacement' },
    published_until: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'a retired key: the earliest it stops being published; null while it signs, or while a token without expiry needs it',
    },
  },
};

/** A provider tried before people use it (api/people/upstream/check.ts). */
/** A stream_id in the query (SSF 1.0 §8.1). */
const STREAM_ID = { name: 'stream_id', in: 'query', description: "the stream's id", schema: { type: 'string' } };
const SSF_OBJECT = { type: 'object' };
const SSF_ERRORS = { ...ERRORS, '404': { description: 'no such stream of this receiver' } };

/** The Shared Signals transmitter (SSF 1.0, api/ssf/): its metadata, the stream management API of a receiver, its poll endpoint. */
const ssfPaths: Json = {
  '/.well-known/ssf-configuration': {
    get: {
      tags: ['ssf'],
      summary: 'Transmitter metadata (SSF 1.0 §7.1)',
      security: [],
      responses: { '200': { description: 'the metadata' } },
    },
  },
  '/ssf/streams': {
    get: {
      tags: ['ssf'],
      summary: 'One stream of the receiver (stream_id), or all of them (SSF 1.0 §8.1.1.2)',
      parameters: [STREAM_ID],
      responses: { '200': answer('the stream, or a list of streams', SSF_OBJECT), ...SSF_ERRORS },
    },
    post: {
      tags: ['ssf'],
      summary: 'Create a stream (SSF 1.0 §8.1.1.1): description, events_requested, delivery (push or poll)',
      requestBody: { required: true, content: json(SSF_OBJECT) },
      responses: { '201': answer('the stream', SSF_OBJECT), ...ERRORS, '409': { description: 'the receiver has the most streams it may' } },
    },
    patch: {
      tags: ['ssf'],
      summary: "Update a stream (SSF 1.0 §8.1.1.3): the properties sent replace the stream's",
      requestBody: { required: true, content: json(SSF_OBJECT) },
      responses: { '200': answer('the stream', SSF_OBJECT), ...SSF_ERRORS },
    },
    put: {
      tags: ['ssf'],
      summary: 'Replace a stream (SSF 1.0 §8.1.1.4)',
      requestBody: { required: true, content: json(SSF_OBJECT) },
      responses: { '200': answer('the stream', SSF_OBJECT), ...SSF_ERRORS },
    },
    delete: {
      tags: ['ssf'],
      summary: 'Delete a stream (SSF 1.0 §8.1.1.5)',
      parameters: [STREAM_ID],
      responses: { '204': { description: 'deleted' }, ...SSF_ERRORS },
    },
  },
  '/ssf/status': {
    get: {
      tags: ['ssf'],
      summary: "A stream's status (SSF 1.0 §8.1.2.1)",
      parameters: [STREAM_ID],
      responses: { '200': answer('the status', SSF_OBJECT), ...SSF_ERRORS },
    },
    post: {
      tags: ['ssf'],
      summary: "Change a stream's status: enabled, paused, disabled (SSF 1.0 §8.1.2.2)",
      requestBody: { required: true, content: json(SSF_OBJECT) },
      responses: { '200': answer('the status', SSF_OBJECT), ...SSF_ERRORS },
    },
  },
  '/ssf/subjects/add': {
    post: {
      tags: ['ssf'],
      summary: 'Add a subject to a stream (SSF 1.0 §8.1.3.1)',
      requestBody: { required: true, content: json(SSF_OBJECT) },
      responses: { '200': { description: 'added (or silently ignored)' }, ...SSF_ERRORS },
    },
  },
  '/ssf/subjects/remove': {
    post: {
      tags: ['ssf'],
      summary: 'Remove a subject from a stream (SSF 1.0 §8.1.3.2)',
      requestBody: { required: true, content: json(SSF_OBJECT) },
      responses: { '204': { description: 'removed' }, ...SSF_ERRORS },
    },
  },
  '/ssf/verify': {
    post: {
      tags: ['ssf'],
      summary: 'Ask for a verification event echoing state (SSF 1.0 §8.1.4.2)',
      requestBody: { required: true, content: json(SSF_OBJECT) },
      responses: {
        '204': { description: 'the event follows' },
        ...SSF_ERRORS,
        '429': { description: 'asked again within min_verification_interval' },
      },
    },
  },
  '/ssf/poll/{id}': {
    post: {
      tags: ['ssf'],
      summary: "Poll a stream's SETs, acknowledging those received (RFC 8936 §2.4)",
      parameters: [idParam('stream')],
      requestBody: { required: false, content: json(SSF_OBJECT) },
      responses: { '200': answer('{sets, moreAvailable}', SSF_OBJECT), ...SSF_ERRORS },
    },
  },
};

const providerCheckPaths: Json = {
  '/IdentityProvider/{id}/$check': {
    parameters: [idParam('IdentityProvider')],
    post: {
      tags: ['resources'],
      summary:
        'Try the provider without signing anyone in (OpenID: discovery, issuer, keys, client credentials; GitHub and OAuth 2.0: client ' +
        'credentials; LDAP: connection, bind, search bases). Only for a writer that allow policies let do everything; never says a secret',
      responses: {
        '200': answer('what each check found', {
          type: 'object',
          required: ['ok', 'checks'],
          properties: {
            ok: { type: 'boolean', description: 'every check passed' },
            checks: {
              type: 'array',
              items: {
                type: 'object',
                required: ['check', 'ok', 'detail'],
                properties: { check: { type: 'string' }, ok: { type: 'boolean' }, detail: { type: 'string' } },
              },
            },
          },
        }),
        ...ERRORS,
        '404': NOT_FOUND,
      },
    },
  },
};

const SAML_ENDPOINTS = {
  type: 'array',
  items: {
    type: 'object',
    required: ['url', 'binding'],
    properties: { url: { type: 'string' }, binding: { type: 'string' }, index: { type: 'integer' }, isDefault: { type: 'boolean' } },
  },
};
const SAML_SP = {
  type: 'object',
  description: "what the app's metadata says of it",
  required: ['entityId', 'consumers', 'logout', 'certificatesExpire'],
  properties: {
    entityId: { type: 'string' },
    consumers: { ...SAML_ENDPOINTS, description: 'its AssertionConsumerServices of the HTTP-POST binding' },
    logout: { ...SAML_ENDPOINTS, description: 'its SingleLogoutServices of the HTTP-Redirect and SOAP bindings' },
    certificatesExpire: { type: ['string', 'null'], format: 'date-time', description: 'when the first of its certificates expires' },
  },
};

/** A SAML app as the admin console shows it (api/saml/app-status.ts). */
const samlAppPaths: Json = {
  '/Client/{id}/$saml': {
    parameters: [idParam('Client')],
    get: {
      tags: ['resources'],
      summary:
        "A SAML app: its NameID format and settings, what its metadata says (entity ID, ACS and SLO endpoints), where the metadata comes from and what the box last made of it at its URL, and the box's values to give the app",
      responses: {
        '200': answer('the app', {
          type: 'object',
          required: ['client', 'nameIdFormat', 'idpInitiated', 'encryptAssertions', 'metadata', 'idp'],
          properties: {
            client: { type: 'string' },
            nameIdFormat: { type: 'string', enum: ['persistent', 'emailAddress', 'unspecified'] },
            idpInitiated: { type: 'boolean' },
            encryptAssertions: { type: 'boolean' },
            metadata: {
              type: 'object',
              required: ['source'],
              properties: {
                source: { type: 'string', enum: ['inline', 'url'] },
                url: { type: 'string' },
                status: {
                  type: 'object',
                  description: 'what the box last made of the document at this URL; absent until it first looked there',
                  required: ['outcome', 'url', 'fetchedAt', 'refreshAfter'],
                  properties: {
                    outcome: { type: 'string', enum: ['read', 'refused'] },
                    reason: { type: 'string', enum: ['SamlMetadataUnreachable', 'SamlMetadataInvalid'] },
                    message: { type: 'string' },
                    summary: SAML_SP,
                    url: { type: 'string' },
                    fetchedAt: { type: 'string', format: 'date-time' },
                    refreshAfter: { type: 'string', format: 'date-time' },
                  },
                },
              },
            },
            sp: SAML_SP,
            problem: { type: 'string', description: 'why the inline metadata cannot be read' },
            idp: {
              type: 'object',
              description: "the box as the app's identity provider",
              required: ['metadataUrl', 'entityId', 'ssoUrl', 'sloUrl'],
              properties: {
                metadataUrl: { type: 'string' },
                entityId: { type: 'string' },
                ssoUrl: { type: 'string' },
                sloUrl: { type: 'string' },
              },
            },
          },
        }),
        ...ERRORS,
        '404': NOT_FOUND,
      },
    },
  },
};

export function openApiDocument(baseUrl: string, version: string): Json {
  const resourceSchemas: Json = {};
  for (const kind of RESOURCE_KINDS) {
    const { body, record } = recordSchema(kind);
    resourceSchemas[`${kind}Body`] = body;
    resourceSchemas[kind] = record;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'boxauth',
      version,
      description:
        'One box: OAuth 2.0 and OpenID Connect tokens, sessions, users, groups, policies, and the decision point for the apps of a cluster.',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: baseUrl }],
    security: [{ bearer: [] }],
    tags: ['oauth', 'openid', 'saml', 'resources', 'people', 'scim', 'sessions', 'decisions', 'audit', 'box', 'ssf', 'operations'].map(
      (name) => ({
        name,
      }),
    ),
    paths: {
      ...oauthPaths,
      ...Object.assign({}, ...RESOURCE_KINDS.map(resourcePaths)),
      ...providerCheckPaths,
      ...samlAppPaths,
      ...peoplePaths('users', 'User'),
      ...peoplePaths('groups', 'Group'),
      ...factorPaths,
      ...personSessionPaths,
      ...scimPaths(),
      '/Session': {
        get: {
          tags: ['sessions'],
          summary: 'Search sessions',
          parameters: SEARCH,
          responses: { '200': answer('a Bundle of sessions', bundleOf(ref('Session'))), ...ERRORS },
        },
        delete: {
          tags: ['sessions'],
          summary: "Sign out: close the caller's own session (and its descendants)",
          responses: { '200': { description: 'closed' }, '401': ERRORS['401'] },
        },
      },
      '/Session/{id}': {
        parameters: [idParam('session')],
        get: {
          tags: ['sessions'],
          summary: 'Read a session',
          responses: { '200': answer('the session', ref('Session')), ...ERRORS, '404': NOT_FOUND },
        },
        put: {
          tags: ['sessions'],
          summary: 'Shorten or extend exp and refresh_token_exp, or close it (active: false)',
          requestBody: { required: true, content: json(ref('Session')) },
          responses: {
            '200': answer('the session', ref('Session')),
            '422': { $ref: '#/components/responses/Invalid' },
            ...ERRORS,
            '404': NOT_FOUND,
          },
        },
      },
      ...decisionPaths,
      ...boxPaths,
      ...ssfPaths,
      '/healthz': {
        get: { tags: ['operations'], summary: 'The process is up', security: [], responses: { '200': { description: 'ok' } } },
      },
      '/readyz': {
        get: {
          tags: ['operations'],
          summary: 'Ready: database reachable, migrations applied, not shutting down',
          security: [],
          responses: { '200': { description: 'ready' }, '503': { description: 'not ready, and why' } },
        },
      },
      '/': {
        get: {
          tags: ['operations'],
          summary: 'The box: a page with the ways on for browsers, a JSON index (issuer, discovery, OpenAPI, admin UI) for programs',
          security: [],
          responses: { '200': { description: 'the index' } },
        },
      },
      '/openapi.json': {
        get: { tags: ['operations'], summary: 'This document', security: [], responses: { '200': { description: 'OpenAPI 3.1' } } },
      },
    },
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'an access token of the box; what it may do is what the AccessPolicies allow',
        },
        clientBasic: { type: 'http', scheme: 'basic', description: 'client_id and client_secret (RFC 6749 §2.3.1)' },
      },
      schemas: {
        ...resourceSchemas,
        ...peopleSchemas(),
        ...sessionSchemas(),
        Session: sessionSchema,
        SigningKey: signingKeySchema,
        Reference: {
          type: 'object',
          required: ['id', 'resourceType'],
          properties: { id: { type: 'string' }, resourceType: { type: 'string' } },
        },
        Meta: {
          type: 'object',
          properties: {
            versionId: { type: 'string' },
            createdAt: { type: 'string', format: 'date-time' },
            lastUpdated: { type: 'string', format: 'date-time' },
            managedBy: { type: 'string', description: 'the Kubernetes resource that owns the record; the REST API then refuses changes' },
          },
        },
        Error: { type: 'object', required: ['error'], properties: { error: { type: 'string' }, error_description: { type: 'string' } } },
        OAuthError: oauthError,
        Invalid: {
          type: 'object',
          required: ['entity', 'errors'],
          properties: { entity: {}, errors: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } } },
        },
      },
      responses: {
        BadRequest: {
          description: 'a request that is not one (bad path, query or body)',
          content: { 'application/json': { schema: ref('Error') } },
        },
        Unauthorized: { description: 'no token, or one that is not active', content: { 'application/json': { schema: ref('Error') } } },
        Forbidden: {
          description: "no AccessPolicy allows this request for this token's client and person",
          content: { 'application/json': { schema: ref('Error') } },
        },
        NotFound: { description: 'no such record', content: { 'application/json': { schema: ref('Error') } } },
        Conflict: {
          description: "the record exists, is owned by a Kubernetes resource, or is one of the box's own",
          content: { 'application/json': { schema: ref('Error') } },
        },
        Invalid: { description: 'validation failed: every problem, by field', content: { 'application/json': { schema: ref('Invalid') } } },
        OAuthError: { description: 'an OAuth error (RFC 6749 §5.2)', content: { 'application/json': { schema: ref('OAuthError') } } },
      },
    },
  };
}
