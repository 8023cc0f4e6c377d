// The resources of a box as the API shows them.
import type { JwtAlg } from './config.js';

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

export type TokenFormat = 'opaque' | 'jwt';

/** The settings of one grant under Client.auth. */
export interface GrantSettings {
  token_format?: TokenFormat;
  access_token_expiration?: number;
  refresh_token?: boolean;
  refresh_token_expiration?: number;
  refresh_token_rotation?: boolean;
  redirect_uri?: string;
  /** OpenID Connect: how long an ID token of this grant lives (seconds). */
  id_token_expiration?: number;
}

export type GrantType =
  'client_credentials' | 'implicit' | 'authorization_code' | 'refresh_token' | 'urn:ietf:params:oauth:grant-type:device_code';

export interface Client {
  resourceType: 'Client';
  id: string;
  grant_types: GrantType[];
  first_party?: boolean;
  /** OpenID Connect: what this client's ID tokens are signed with (RS256 unless set). */
  id_token_signed_response_alg?: JwtAlg;
  /** OpenID Connect: the scopes' claims in the ID token even when an access token comes with it (Core §5.4 puts them in UserInfo). */
  claims_in_id_token?: boolean;
  description?: string;
  /** Allow-lists: the audiences and scopes this client may be granted (unset: any). */
  audience?: string[];
  scope?: string[];
  /** OpenID Connect RP-initiated logout: where a person may be sent back after signing out, exactly. */
  post_logout_redirect_uris?: string[];
  auth?: {
    client_credentials?: GrantSettings;
    implicit?: GrantSettings;
    authorization_code?: GrantSettings;
    device_code?: GrantSettings;
    workload?: { issuer?: string; serviceAccounts: { namespace: string; name: string; uid?: string }[] };
    [other: string]: unknown;
  };
  meta?: Meta;
}

export interface AccessPolicy {
  resourceType: 'AccessPolicy';
  id: string;
  /** The App this policy guards; unset: the box's own API. Never changes (a policy guards one thing). */
  app?: string;
  /** Evaluated and logged (would allow, would deny), without effect. */
  dryRun?: boolean;
  engine: 'allow' | 'json-schema' | 'matcho';
  description?: string;
  link?: Reference[];
  schema?: Record<string, unknown>;
  matcho?: Record<string, unknown>;
  meta?: Meta;
}

/** An app of the cluster that the box guards (crds/app.yaml). */
export interface App {
  resourceType: 'App';
  id: string;
  description?: string;
  urls: string[];
  audience?: string;
  signIn?: { client: string };
  upstream?: {
    headers?: { user?: string; email?: string; groups?: string; client?: string };
    token?: { header: string; lifetime?: number };
  };
  policyHeaders?: string[];
  meta?: Meta;
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
  email: string;
  groups: { id: string; name: string }[];
}

export interface Bundle<T> {
  resourceType: 'Bundle';
  type: 'searchset';
  total: number;
  entry: { resource: T }[];
}
