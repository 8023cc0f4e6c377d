// The request objects of ../requests.ts as CEL sees them: one shape per environment, declared here
// beside nothing else, and checked against samples of the TypeScript types by a unit test, so the
// two cannot drift. A shape says which fields an object has and their CEL types; an open map
// (`params`, `query`, `headers`, `resource.properties`, `context`, `claims`, `user.data`,
// `user.scim`, an App's `user.claims`, `body`) may hold any key, so naming one of its keys is never refused at write time.
// Naming a field that an object of the shape cannot have is (./check.ts).

/** A CEL type of a field: a scalar, a list, an open map (any string key), or an object with fields. */
export type CelShape =
  | 'string'
  | 'bool'
  | 'int'
  | 'double'
  /** Any JSON value (an open map's values, a body). */
  | 'dyn'
  | { readonly list: CelShape }
  | { readonly map: CelShape }
  | CelObjectShape;

export interface CelObjectShape {
  readonly fields: Readonly<Record<string, CelShape>>;
  /**
   * Keys beyond `fields` the object may carry as sent (an AuthZEN resource is passed as the PEP
   * sent it): their values' type. Without it, a key not in `fields` cannot exist.
   */
  readonly rest?: CelShape;
}

export const isObjectShape = (s: CelShape): s is CelObjectShape => typeof s === 'object' && 'fields' in s;

const openMap: CelShape = { map: 'dyn' };
const strings: CelShape = { list: 'string' };

/** RequestUser, with what i53-refs adds: the person's data, SCIM attributes and upstream identities. */
export const CEL_PERSON: CelObjectShape = {
  fields: {
    id: 'string',
    email: 'string',
    email_verified: 'bool',
    groups: strings,
    data: openMap,
    scim: openMap,
    identities: { list: { fields: { provider: 'string', subject: 'string' } } },
  },
};

/**
 * AppPerson: a person as an App's policies see them, what the App's tokens carry and the claims it
 * shapes (`claims`, open: its names are the App's). Their data, SCIM attributes and upstream
 * identities are no fields of it: an App's policy that names one is refused when written.
 */
export const CEL_APP_PERSON: CelObjectShape = {
  fields: {
    id: 'string',
    email: 'string',
    email_verified: 'bool',
    groups: strings,
    claims: openMap,
  },
};

/** RFC 8693's act, a prior actor nested in it. Recursive in JSON; two levels typed, deeper ones dyn. */
const actFields = { sub: 'string', iss: 'string', client_id: 'string' } as const;
const act: CelObjectShape = { fields: { ...actFields, act: { fields: { ...actFields, act: 'dyn' } } } };

const party: CelObjectShape = {
  fields: {
    kind: 'string',
    iss: 'string',
    sub: 'string',
    client_id: 'string',
    user: CEL_PERSON,
    // A string or a list of strings (JWT aud).
    aud: 'dyn',
    scope: 'string',
    act,
    namespace: 'string',
    serviceAccount: 'string',
    claims: openMap,
  },
};

/**
 * BoxApiRequest, ExchangeRequest's `exchange`, RegistrationRequest's `registration` and SsfRequest's `ssf` (each absent
 * on the others' requests: reading it there is an error, which denies).
 */
const boxApi: CelObjectShape = {
  fields: {
    'request-method': 'string',
    uri: 'string',
    params: openMap,
    'query-string': 'string',
    client: openMap,
    user: CEL_PERSON,
    scope: 'string',
    body: 'dyn',
    exchange: {
      fields: {
        subject: party,
        actor: party,
        delegation: 'bool',
        audience: 'string',
        scope: strings,
        requested_token_type: 'string',
        act,
        txn: { fields: { request_context: openMap, request_details: openMap, replacing: 'bool' } },
      },
    },
    registration: {
      fields: {
        kind: 'string',
        client_id: 'string',
        host: 'string',
        redirect_uris: strings,
        client_name: 'string',
        scope: strings,
        resource: strings,
      },
    },
    ssf: { fields: { receiver: 'string', stream: 'string', subject: CEL_PERSON } },
  },
};

/** AppRequest, and AuthzenRequest's `resource` and `context` (absent at a gateway's request: reading them there denies). */
const app: CelObjectShape = {
  fields: {
    app: 'string',
    'request-method': 'string',
    host: 'string',
    path: 'string',
    // A parameter's value is a string, or a list of strings when it is repeated.
    query: { map: 'dyn' },
    headers: { map: 'string' },
    user: CEL_APP_PERSON,
    client: 'string',
    scope: 'string',
    audience: 'string',
    subject: { fields: { iss: 'string', sub: 'string' } },
    act,
    amr: strings,
    acr: 'string',
    jsonrpc: { fields: { method: 'string', tool: 'string' } },
    txn: {
      fields: { txn: 'string', sub: 'string', scope: strings, tctx: openMap, rctx: openMap, req_wl: strings, iat: 'int', exp: 'int' },
    },
    // §5.3: type, id and properties; the resource is passed as sent, so other keys may be there.
    resource: { fields: { type: 'string', id: 'string', properties: openMap }, rest: 'dyn' },
    context: openMap,
  },
};

/**
 * The environments, by the policies they check: a policy with `app` is asked about an app's
 * requests (a gateway's, and AuthZEN evaluations); one without, about requests on the box's API
 * and, when linked to a client, the token exchanges of that client (../evaluate.ts
 * decideExchange), so the box's environment covers both.
 */
export const CEL_ENVIRONMENTS = { 'box-api': boxApi, app } as const satisfies Record<string, CelObjectShape>;

export type CelEnvironmentName = keyof typeof CEL_ENVIRONMENTS;
