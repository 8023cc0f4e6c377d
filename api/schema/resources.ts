// Validation of Client and AccessPolicy bodies, from the one source of their
// schemas: the openAPIV3Schema of the CRDs in crds/. The REST body carries the
// CRD's spec fields at the top level, plus id, resourceType and (Client) secret.
//
// CEL rules (x-kubernetes-validations) cannot run here, so each has a twin
// predicate below, keyed by the rule text; a unit test fails when a rule in a
// CRD has no twin, so the two cannot drift apart unnoticed.
import fs from 'node:fs';
import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import { type FieldErrors, noFieldErrors, ValidationError } from '../errors.js';
import { invisibleProblem } from '../input.js';
import { clientKeysProblems, isCredentialMethod, isSecretMethod } from '../client-keys.js';
import { type FederatedBinding, federatedProblems } from '../federated-subjects.js';
import { projectPath } from '../paths.js';
import { ldapClaimNames, type LdapAttributeSettings } from './ldap-attributes.js';
import { RESOURCE_KINDS, type CrdKind, type ResourceKind } from '../record-kinds.js';
import type { AccessPolicy, App, Client, Hook, IdentityProvider, Webhook } from '../types.js';

type Schema = Record<string, unknown>;
type Spec = Record<string, unknown> & {
  grant_types?: string[];
  auth?: Record<string, unknown>;
  engine?: string;
  secretRef?: unknown;
  generateSecret?: boolean;
  policyHeaders?: string[];
  type?: string;
  groups?: { upstream?: string; claim?: { name: string } }[];
  ldap?: { userSearch: LdapAttributeSettings };
  jwks?: unknown;
  jwks_uri?: string;
  token_endpoint_auth_method?: string;
  require_signed_request_object?: boolean;
  request_object_signing_alg?: string;
  profile?: string;
  id_token_signed_response_alg?: string;
  saml?: { metadata?: { xml?: string; url?: string } };
};

/** How many of RFC 8705 §2.1.2's subject fields a Client sets. */
const certificateSubjects = (s: Spec): number =>
  [
    'tls_client_auth_subject_dn',
    'tls_client_auth_san_dns',
    'tls_client_auth_san_uri',
    'tls_client_auth_san_ip',
    'tls_client_auth_san_email',
  ].filter((k) => s[k] !== undefined).length;

/** A grant's settings, when present, register a redirect URI one way or the other. */
const hasRedirect = (grant: unknown): boolean =>
  grant === undefined || (typeof grant === 'object' && grant !== null && ('redirect_uri' in grant || 'redirect_uris' in grant));

/** A Client's auth.workload, as the twins read it. */
const workloadOf = (s: Spec): { serviceAccounts?: unknown; federated?: { subject?: string; subjectPattern?: string }[] } | undefined =>
  s.auth?.workload as ReturnType<typeof workloadOf>;

/** JS twins of the CRDs' CEL rules, keyed by the exact rule text. */
export const CEL_TWINS: Record<string, (spec: Spec) => boolean> = {
  "!self.grant_types.exists(g, g == 'implicit') || (has(self.auth) && has(self.auth.implicit))": (s) =>
    !s.grant_types?.includes('implicit') || s.auth?.implicit !== undefined,
  "!self.grant_types.exists(g, g == 'authorization_code') || (has(self.auth) && has(self.auth.authorization_code))": (s) =>
    !s.grant_types?.includes('authorization_code') || s.auth?.authorization_code !== undefined,
  // A REST body has neither secretRef nor generateSecret: it carries the secret itself (required there by the Client route).
  "!self.grant_types.exists(g, g == 'client_credentials') || has(self.secretRef) || !has(self.generateSecret) || self.generateSecret || (has(self.auth) && has(self.auth.workload)) || (has(self.auth) && has(self.auth.spiffe)) || has(self.jwks) || has(self.jwks_uri) || (has(self.token_endpoint_auth_method) && self.token_endpoint_auth_method in ['private_key_jwt', 'tls_client_auth', 'self_signed_tls_client_auth'])":
    (s) =>
      !s.grant_types?.includes('client_credentials') ||
      s.secretRef !== undefined ||
      s.generateSecret !== false ||
      s.auth?.workload !== undefined ||
      s.auth?.spiffe !== undefined ||
      s.jwks !== undefined ||
      s.jwks_uri !== undefined ||
      isCredentialMethod(s.token_endpoint_auth_method),
  // RFC 7591 §2's secret methods need a secret; a REST body has neither field, and its secret is the Client route's to require.
  "!has(self.token_endpoint_auth_method) || !(self.token_endpoint_auth_method in ['client_secret_basic', 'client_secret_post']) || has(self.secretRef) || !has(self.generateSecret) || self.generateSecret":
    (s) => !isSecretMethod(s.token_endpoint_auth_method) || s.secretRef !== undefined || s.generateSecret !== false,
  // RFC 6749 §2.1: a public client has no credentials; §4.4: client_credentials is for confidential clients only.
  "!has(self.token_endpoint_auth_method) || self.token_endpoint_auth_method != 'none' || !has(self.secretRef)": (s) =>
    s.token_endpoint_auth_method !== 'none' || s.secretRef === undefined,
  "!has(self.token_endpoint_auth_method) || self.token_endpoint_auth_method != 'none' || !has(self.generateSecret) || !self.generateSecret":
    (s) => s.token_endpoint_auth_method !== 'none' || s.generateSecret !== true,
  "!has(self.token_endpoint_auth_method) || self.token_endpoint_auth_method != 'none' || !self.grant_types.exists(g, g == 'client_credentials')":
    (s) => s.token_endpoint_auth_method !== 'none' || !s.grant_types?.includes('client_credentials'),
  // RFC 8705 §2.1.2: "A client using the tls_client_auth authentication method MUST use exactly one of the below metadata parameters".
  "!has(self.token_endpoint_auth_method) || self.token_endpoint_auth_method != 'tls_client_auth' || [has(self.tls_client_auth_subject_dn), has(self.tls_client_auth_san_dns), has(self.tls_client_auth_san_uri), has(self.tls_client_auth_san_ip), has(self.tls_client_auth_san_email)].filter(x, x).size() == 1":
    (s) => s.token_endpoint_auth_method !== 'tls_client_auth' || certificateSubjects(s) === 1,
  "(has(self.token_endpoint_auth_method) && self.token_endpoint_auth_method == 'tls_client_auth') || !(has(self.tls_client_auth_subject_dn) || has(self.tls_client_auth_san_dns) || has(self.tls_client_auth_san_uri) || has(self.tls_client_auth_san_ip) || has(self.tls_client_auth_san_email))":
    (s) => s.token_endpoint_auth_method === 'tls_client_auth' || certificateSubjects(s) === 0,
  // RFC 8705 §2.2.2: the jwks or jwks_uri "are used to convey the client's certificates".
  "!has(self.token_endpoint_auth_method) || self.token_endpoint_auth_method != 'self_signed_tls_client_auth' || has(self.jwks) || has(self.jwks_uri)":
    (s) => s.token_endpoint_auth_method !== 'self_signed_tls_client_auth' || s.jwks !== undefined || s.jwks_uri !== undefined,
  // RFC 7591 §2: "The "jwks_uri" and "jwks" parameters MUST NOT both be present in the same request or response."
  '!has(self.jwks) || !has(self.jwks_uri)': (s) => s.jwks === undefined || s.jwks_uri === undefined,
  // RFC 9101: a request object is verified with the client's own keys; without them none could be taken.
  '!has(self.require_signed_request_object) || !self.require_signed_request_object || has(self.jwks) || has(self.jwks_uri)': (s) =>
    s.require_signed_request_object !== true || s.jwks !== undefined || s.jwks_uri !== undefined,
  '!has(self.request_object_signing_alg) || has(self.jwks) || has(self.jwks_uri)': (s) =>
    s.request_object_signing_alg === undefined || s.jwks !== undefined || s.jwks_uri !== undefined,
  "!has(self.auth) || !has(self.auth.workload) || self.grant_types.exists(g, g == 'client_credentials')": (s) =>
    s.auth?.workload === undefined || s.grant_types?.includes('client_credentials') === true,
  '!has(self.auth) || !has(self.auth.workload) || has(self.auth.workload.serviceAccounts) || has(self.auth.workload.federated)': (s) =>
    workloadOf(s) === undefined || workloadOf(s)!.serviceAccounts !== undefined || workloadOf(s)!.federated !== undefined,
  '!has(self.auth) || !has(self.auth.workload) || !has(self.auth.workload.federated) || self.auth.workload.federated.all(b, has(b.subject) != has(b.subjectPattern))':
    (s) => (workloadOf(s)?.federated ?? []).every((b) => (b.subject === undefined) !== (b.subjectPattern === undefined)),
  "!has(self.auth) || !has(self.auth.spiffe) || self.grant_types.exists(g, g == 'client_credentials')": (s) =>
    s.auth?.spiffe === undefined || s.grant_types?.includes('client_credentials') === true,
  // FAPI 2.0 (api/oauth/fapi2.ts): what a fapi2 client may not be written with.
  "!has(self.profile) || (has(self.token_endpoint_auth_method) && self.token_endpoint_auth_method in ['private_key_jwt', 'tls_client_auth', 'self_signed_tls_client_auth'])":
    (s) => s.profile === undefined || isCredentialMethod(s.token_endpoint_auth_method),
  "!has(self.profile) || !self.grant_types.exists(g, g == 'implicit')": (s) =>
    s.profile === undefined || !s.grant_types?.includes('implicit'),
  '!has(self.profile) || !has(self.auth) || (!has(self.auth.workload) && !has(self.auth.spiffe))': (s) =>
    s.profile === undefined || (s.auth?.workload === undefined && s.auth?.spiffe === undefined),
  '!has(self.profile) || !has(self.secretRef)': (s) => s.profile === undefined || s.secretRef === undefined,
  "!has(self.profile) || !has(self.id_token_signed_response_alg) || self.id_token_signed_response_alg != 'RS256'": (s) =>
    s.profile === undefined || s.id_token_signed_response_alg !== 'RS256',
  "!has(self.token_endpoint_auth_method) || self.token_endpoint_auth_method != 'private_key_jwt' || has(self.jwks) || has(self.jwks_uri)": (
    s,
  ) => s.token_endpoint_auth_method !== 'private_key_jwt' || s.jwks !== undefined || s.jwks_uri !== undefined,
  // A SAML app (docs/guides/saml-apps.md) may use no OAuth grant at all; every other client uses one.
  'self.grant_types.size() > 0 || has(self.saml)': (s) => (s.grant_types?.length ?? 0) > 0 || s.saml !== undefined,
  '!has(self.saml) || has(self.saml.metadata.xml) != has(self.saml.metadata.url)': (s) =>
    s.saml === undefined || (s.saml.metadata?.xml === undefined) !== (s.saml.metadata?.url === undefined),
  // An agent's client is the box's to write (api/oauth/agents.ts, registration.ts): one written here
  // would pass any client for an agent, and a rewritten one would be undone at its next fetch.
  '!has(self.registration)': (s) => s.registration === undefined,
  '!has(self.auth) || !has(self.auth.implicit) || has(self.auth.implicit.redirect_uri) || has(self.auth.implicit.redirect_uris)': (s) =>
    hasRedirect(s.auth?.implicit),
  '!has(self.auth) || !has(self.auth.authorization_code) || has(self.auth.authorization_code.redirect_uri) || has(self.auth.authorization_code.redirect_uris)':
    (s) => hasRedirect(s.auth?.authorization_code),
  "self.engine != 'json-schema' || has(self.schema)": (s) => s.engine !== 'json-schema' || s.schema !== undefined,
  // A transition rule (oldSelf): the REST API checks it against the stored record (routes/resources.ts).
  'has(self.app) == has(oldSelf.app)': () => true,
  "self.engine != 'matcho' || has(self.matcho)": (s) => s.engine !== 'matcho' || s.matcho !== undefined,
  "self.engine != 'cel' || has(self.cel)": (s) => s.engine !== 'cel' || s.cel !== undefined,
  '!has(self.acr) || has(self.app)': (s) => s.acr === undefined || s.app !== undefined,
  '!has(self.scope) || has(self.app)': (s) => s.scope === undefined || s.app !== undefined,
  "!has(self.policyHeaders) || !self.policyHeaders.exists(h, h in ['authorization', 'proxy-authorization', 'cookie'])": (s) =>
    !s.policyHeaders?.some((h) => ['authorization', 'proxy-authorization', 'cookie'].includes(h)),
  // IdentityProvider: a group rule names one source; a provider carries the settings of its type only.
  '!has(self.groups) || self.groups.all(r, has(r.upstream) != has(r.claim))': (s) =>
    (s.groups ?? []).every((rule) => (rule.upstream === undefined) !== (rule.claim === undefined)),
  // An LDAP provider's claims are dn and the attributes the box reads (api/people/upstream/ldap.ts profileOf): a rule naming another would never match.
  "self.type != 'ldap' || !has(self.ldap) || !has(self.groups) || self.groups.all(r, !has(r.claim) || r.claim.name in ['dn', has(self.ldap.userSearch.idAttribute) ? self.ldap.userSearch.idAttribute : 'entryUUID', has(self.ldap.userSearch.emailAttribute) ? self.ldap.userSearch.emailAttribute : 'mail', has(self.ldap.userSearch.nameAttribute) ? self.ldap.userSearch.nameAttribute : 'cn'])":
    (s) =>
      s.type !== 'ldap' ||
      s.ldap === undefined ||
      (s.groups ?? []).every((rule) => rule.claim === undefined || ldapClaimNames(s.ldap!.userSearch).includes(rule.claim.name)),
  "(self.type == 'oidc') == has(self.oidc) && (self.type == 'oauth2') == has(self.oauth2) && (self.type == 'github') == has(self.github) && (self.type == 'ldap') == has(self.ldap) && (self.type == 'saml') == has(self.saml)":
    (s) => (['oidc', 'oauth2', 'github', 'ldap', 'saml'] as const).every((type) => (s.type === type) === (s[type] !== undefined)),
  // A SAML provider's metadata comes from one place: its URL or the document itself.
  '!has(self.saml) || has(self.saml.metadata.url) != has(self.saml.metadata.xml)': (s) =>
    s.saml === undefined || (s.saml.metadata?.url === undefined) !== (s.saml.metadata?.xml === undefined),
  // Hook: one place it is at.
  'has(self.service) != has(self.url)': (s) => (s.service === undefined) !== (s.url === undefined),
  // A REST body carries `secret` or none (the stored one is kept): the Hook route requires a proof with what is stored.
  'has(self.secretRef) || (has(self.boxToken) && self.boxToken)': () => true,
};

export interface CelRule {
  rule: string;
  message: string;
  fieldPath?: string;
}

/** A node of a CRD's structural schema: every node typed, objects nesting by properties, lists by items. */
export type SchemaNode = Record<string, unknown> & {
  type?: string;
  description?: string;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  items?: SchemaNode;
  enum?: unknown[];
  additionalProperties?: SchemaNode | boolean;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  maxItems?: number;
};

/** One field of an object node. */
export interface SchemaField {
  name: string;
  node: SchemaNode;
  required: boolean;
}

/**
 * The fields of an object node, in the CRD's order: the one walk of a structural schema, which
 * the generated types (./typegen.ts) and the resource reference (api/docs/reference.ts) both take.
 */
export function fieldsOf(node: SchemaNode): SchemaField[] {
  const required = new Set(node.required ?? []);
  return Object.entries(node.properties ?? {}).map(([name, child]) => ({ name, node: child, required: required.has(name) }));
}

export interface CrdSchema {
  spec: Schema;
  rules: CelRule[];
}

export function readCrdSchema(kind: CrdKind): CrdSchema {
  const crd = parseYaml(fs.readFileSync(projectPath('crds', `${kind.toLowerCase()}.yaml`), 'utf8')) as {
    spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: Schema } } } }[] };
  };
  const spec = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec;
  return { spec, rules: (spec['x-kubernetes-validations'] as CelRule[] | undefined) ?? [] };
}

/** A Kubernetes structural schema as plain JSON Schema: closed objects, no x-kubernetes-* keywords. */
export function toJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (node === null || typeof node !== 'object') return node;
  const out: Schema = {};
  for (const [key, value] of Object.entries(node as Schema)) {
    if (key.startsWith('x-kubernetes-') || key === 'default') continue;
    if (key === 'format' && (value === 'int64' || value === 'int32')) continue;
    out[key] =
      key === 'properties'
        ? Object.fromEntries(Object.entries(value as Schema).map(([k, v]) => [k, toJsonSchema(v)]))
        : toJsonSchema(value);
  }
  const preserve = (node as Schema)['x-kubernetes-preserve-unknown-fields'] === true;
  if (out.type === 'object' && out.properties && !preserve) out.additionalProperties = false;
  return out;
}

const ID_SCHEMA = { type: 'string', minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9][A-Za-z0-9._~-]*$' };

/**
 * What a REST body carries in place of a CRD's secretRef (a Kubernetes Secret the operator reads): the
 * secret itself, declared `writeOnly` (OpenAPI 3.1, JSON Schema's meta-data vocabulary): taken, never
 * shown — not by a read, nor in a 422's entity (./write-only.ts).
 */
const REST_SECRETS: Partial<Record<ResourceKind, Schema>> = {
  Client: { type: 'string', minLength: 8, maxLength: 512 },
  // The client secret or the bind password.
  IdentityProvider: { type: 'string', minLength: 1, maxLength: 4096 },
  // The signing secret (its form: api/webhooks/signing.ts).
  Webhook: { type: 'string', minLength: 1, maxLength: 512 },
  // A Hook's signing secret, as a Webhook's.
  Hook: { type: 'string', minLength: 1, maxLength: 512 },
};

export function restSchema(kind: ResourceKind): { schema: Schema; rules: CelRule[] } {
  const { spec, rules } = readCrdSchema(kind);
  const body = toJsonSchema(spec) as Schema & { properties: Schema };
  const properties: Schema = { ...body.properties, id: ID_SCHEMA, resourceType: { const: kind }, meta: { type: 'object' } };
  if (properties.secretRef !== undefined) {
    const secret = REST_SECRETS[kind];
    if (!secret) throw new Error(`the CRD of ${kind} has a secretRef: say in REST_SECRETS what its REST body takes instead`);
    // Kubernetes-only fields: the REST API takes the secret itself.
    delete properties.secretRef;
    delete properties.generateSecret;
    properties.secret = { ...secret, writeOnly: true };
  }
  return { schema: { ...body, properties }, rules };
}

function fieldOf(error: ErrorObject): string {
  const base = error.instancePath.replace(/^\//, '').split('/').filter(Boolean).join('.');
  const child =
    (error.params as { missingProperty?: string; additionalProperty?: string }).missingProperty ??
    (error.params as { additionalProperty?: string }).additionalProperty;
  return [base, child].filter(Boolean).join('.') || 'resource';
}

function messageOf(error: ErrorObject): string {
  switch (error.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not a known field';
    case 'enum':
      return `must be one of: ${(error.params as { allowedValues: unknown[] }).allowedValues.join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify((error.params as { allowedValue: unknown }).allowedValue)}`;
    default:
      return error.message ?? 'is invalid';
  }
}

export function fieldErrors(errors: ErrorObject[] | null | undefined): FieldErrors {
  const out = noFieldErrors();
  for (const error of errors ?? []) {
    const field = fieldOf(error);
    const message = messageOf(error);
    if (!(out[field] ??= []).includes(message)) out[field].push(message);
  }
  return out;
}

export function createAjv(options: Options = {}): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, ...options });
  (addFormatsModule as unknown as (a: Ajv) => void)(ajv);
  return ajv;
}

class ResourceValidator {
  private readonly validate: ValidateFunction;

  constructor(
    ajv: Ajv,
    readonly kind: ResourceKind,
  ) {
    const { schema, rules } = restSchema(kind);
    this.validate = ajv.compile(schema);
    this.rules = rules;
  }

  private readonly rules: CelRule[];

  /** Throws ValidationError (422) listing every problem of the body. */
  check(body: unknown): void {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new ValidationError(body, { resource: [`must be a ${this.kind} object`] });
    }
    if (!this.validate(body)) throw new ValidationError(body, fieldErrors(this.validate.errors));
    const errors = noFieldErrors();
    for (const rule of this.rules) {
      const twin = CEL_TWINS[rule.rule];
      if (twin && !twin(body as Spec)) (errors[(rule.fieldPath ?? '.resource').slice(1)] ??= []).push(rule.message);
    }
    // A Client's keys are judged beyond their shape: public, of an accepted kind and size (../client-keys.ts).
    if (this.kind === 'Client')
      for (const [field, problems] of Object.entries({
        ...clientKeysProblems(body as Spec),
        ...federatedProblems(workloadOf(body as Spec)?.federated as FederatedBinding[] | undefined),
      }))
        (errors[field] ??= []).push(...problems);
    for (const field of SHOWN_TEXTS) {
      const value = (body as Record<string, unknown>)[field];
      // A description is prose: its lines and tabs are its own.
      const invisible =
        typeof value === 'string' ? invisibleProblem(field === 'description' ? value.replace(/[\n\t]/g, ' ') : value) : undefined;
      if (invisible) (errors[field] ??= []).push(invisible);
    }
    if (Object.keys(errors).length) throw new ValidationError(body, errors);
  }
}

/**
 * The fields of a spec that pages show people as a name (a Client's or an App's description on the
 * consent page, an IdentityProvider's displayName on its sign-in button, every kind's in the admin
 * console): what a name must not hold (api/input.ts invisibleProblem) holds for them, at the REST
 * API and (InvalidSpec) for the operator alike.
 */
const SHOWN_TEXTS = ['description', 'displayName'] as const;

let validators: Record<ResourceKind, ResourceValidator> | undefined;

/** What a REST body of each kind is once validateResource has let it through. */
export interface ResourceBodies {
  Client: Client & { secret?: string };
  AccessPolicy: AccessPolicy;
  App: App;
  IdentityProvider: IdentityProvider & { secret?: string };
  Webhook: Webhook & { secret?: string };
  Hook: Hook & { secret?: string };
}

/** Throws ValidationError (422) listing every problem; afterwards the body is a resource of `kind`. */
export function validateResource<K extends ResourceKind>(kind: K, body: unknown): asserts body is ResourceBodies[K] {
  if (!validators) {
    const ajv = createAjv();
    validators = Object.fromEntries(RESOURCE_KINDS.map((kind) => [kind, new ResourceValidator(ajv, kind)])) as Record<
      ResourceKind,
      ResourceValidator
    >;
  }
  validators[kind].check(body);
}
