// The resources of a box as the API shows them.
import type { AccessPolicySpec, AppSpec, ClientSpec, IdentityProviderSpec, WebhookSpec, HookSpec } from './schema/crd-types.js';

export interface Reference {
  id: string;
  resourceType: string;
}

export interface Meta {
  versionId: string;
  createdAt: string;
  lastUpdated: string;
  /** Set when a Kubernetes resource owns the record; the REST API then refuses changes. */
  managedBy?: string;
}

type ClientAuth = NonNullable<ClientSpec['auth']>;

/** The settings of one grant under Client.auth (authorization_code's fields are every grant's). */
export type GrantSettings = Partial<NonNullable<ClientAuth['authorization_code']>>;

/** The grants with settings under Client.auth. */
export type GrantName = Exclude<keyof ClientAuth, 'workload' | 'spiffe'>;

export type TokenFormat = NonNullable<GrantSettings['token_format']>;

export type GrantType = ClientSpec['grant_types'][number];

/** The REST form of a Client: the CRD's spec at the top level; the secret is the REST API's own (never shown). */
export type Client = { resourceType: 'Client'; id: string; meta?: Meta } & Omit<ClientSpec, 'secretRef' | 'generateSecret'>;

export type AccessPolicy = { resourceType: 'AccessPolicy'; id: string; meta?: Meta } & AccessPolicySpec;

/** An app of the cluster that the box guards (crds/app.yaml). */
export type App = { resourceType: 'App'; id: string; meta?: Meta } & AppSpec;

/** Somewhere people already have an account (crds/identityprovider.yaml); its secret is the REST API's own (never shown). */
export type IdentityProvider = { resourceType: 'IdentityProvider'; id: string; meta?: Meta } & Omit<IdentityProviderSpec, 'secretRef'>;

/** Where the box POSTs its events, signed (crds/webhook.yaml); its signing secret is the REST API's own (never shown). */
export type Webhook = { resourceType: 'Webhook'; id: string; meta?: Meta } & Omit<WebhookSpec, 'secretRef'>;

/** The team's own code the box calls at a moment of a sign-in or an issuance (crds/hook.yaml); its signing secret is the REST API's own (never shown). */
export type Hook = { resourceType: 'Hook'; id: string; meta?: Meta } & Omit<HookSpec, 'secretRef'>;

/** The records of the resource API, by kind. */
export interface Resources {
  Client: Client;
  AccessPolicy: AccessPolicy;
  App: App;
  IdentityProvider: IdentityProvider;
  Webhook: Webhook;
  Hook: Hook;
}

export interface Session {
  resourceType: 'Session';
  id: string;
  type: string;
  client: Reference;
  user?: Reference;
  audience?: string;
  scope?: string;
  start: string;
  exp?: string;
  refresh_token_exp?: string;
  active: boolean;
  end?: string;
  parent?: Reference;
  details?: Record<string, unknown>;
}

/** A user as the policies of their tokens see them (cached by id: api/services.ts `users`). */
export interface PrincipalUser {
  id: string;
  /** Their opaque stable id (users.subject): what the subs clients see of them are made of (api/credentials/subjects.ts). */
  subject: string;
  email: string;
  /** Whether the box vouches for the address (an administrator's, or confirmed): a self sign-up's is not. */
  emailVerified: boolean;
  groups: { id: string; name: string }[];
  /** Their data (users.data) as an object; {} when none, or when it holds JSON that is not an object. */
  data: Record<string, unknown>;
  /** Their SCIM attributes, as the SCIM door shows them; {} for a person no directory wrote. */
  scim: Record<string, unknown>;
  /** Their identities at upstream providers. */
  identities: { provider: string; subject: string }[];
}

export interface Bundle<T> {
  resourceType: 'Bundle';
  type: 'searchset';
  total: number;
  entry: { resource: T }[];
}
