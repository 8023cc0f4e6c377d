// The condition types and reasons the operator writes into status.conditions
// and Events. They are API: `kubectl wait --for=condition=Ready`, alerts and
// GitOps tools key on them, so they live here, each said once with where it is
// set and what a person does about it, and the README's "Conditions and
// reasons" tables are checked against REASONS by a unit test
// (test/unit/operator/reasons.test.ts). A Ready=False reason is also the
// reason of the Warning Event written when it is set, and a Ready=True reason
// that of the Normal Event written when the resource becomes ready.

export const ConditionType = {
  /** Every resource: it is in place as its spec says (True), or why not (False). */
  Ready: 'Ready',
  /** A Box: whether any of its API pods is available. */
  Available: 'Available',
} as const;
export type ConditionType = (typeof ConditionType)[keyof typeof ConditionType];

/** Where a reason appears: as a condition's reason with that status, or only as the reason of a Normal Event. */
export type ReasonUse = { condition: ConditionType; status: 'True' | 'False' } | { event: 'Normal' };

const READY = { condition: ConditionType.Ready, status: 'True' } as const;
const NOT_READY = { condition: ConditionType.Ready, status: 'False' } as const;
const AVAILABLE = { condition: ConditionType.Available, status: 'True' } as const;
const UNAVAILABLE = { condition: ConditionType.Available, status: 'False' } as const;
const NORMAL_EVENT = { event: 'Normal' } as const;

const box = {
  /** Ready=True: the schema, Secrets, Deployment and Service are in place; status.url is where the box serves. */
  Provisioned: READY,
  /**
   * Ready=False: the namespace already has an older Box, and a namespace holds one box; this one is left alone
   * (no finalizer, no status fields). Delete it, or create it in another namespace.
   */
  DuplicateBox: NOT_READY,
  /** Ready=False: spec.database.secretRef names a Secret that does not exist. Create it, or fix the name; retried with backoff. */
  DatabaseSecretNotFound: NOT_READY,
  /** Ready=False: the Secret of spec.database.secretRef holds no postgres:// URL under its key. Fix it, or spec.database.secretRef.key. */
  DatabaseSecretInvalid: NOT_READY,
  /**
   * Ready=False: spec.tls.secretName names a Secret that does not exist (yet: cert-manager writes it once the Certificate is
   * issued), or that has no tls.crt and tls.key making a pair. The Service and Deployment are left as they are (running pods
   * keep serving what they have). Create or fix the Secret, or the name; the Box is looked at again when the Secret appears
   * or changes.
   */
  TLSSecretNotReady: NOT_READY,
  /**
   * Ready=False: a ServiceAccount of the box's name exists and is not the operator's. Set spec.serviceAccountName to run the
   * API pods as it, or delete it.
   */
  ServiceAccountConflict: NOT_READY,
  /**
   * Ready=False: a schema or role of the box's name is not marked as this namespace's, and the operator changed nothing. If it
   * holds this box's data, mark it (the message gives the statements); otherwise rename or drop it. Looked at again at each
   * resync, not retried in a loop.
   */
  DatabaseOwnedElsewhere: NOT_READY,
  /**
   * Ready=False: the database or the API server failed (the message says how); retried with backoff. Usually passes by itself;
   * when it stays, check the operator's DATABASE_URL and its RBAC.
   */
  ProvisioningFailed: NOT_READY,
  /** Available=True: at least one API pod is available. */
  MinimumReplicasAvailable: AVAILABLE,
  /** Available=False: none of the API pods is available; `kubectl get pods -l app.kubernetes.io/instance=<box>` shows why. */
  NoPodsAvailable: UNAVAILABLE,
  /** Available=False: spec.replicas is 0. Set it to serve. */
  ScaledToZero: UNAVAILABLE,
  /** Normal Event: spec.jwtAlg changed and a new signing key was generated; the API keeps publishing the old one. Nothing to do. */
  SigningKeyReplaced: NORMAL_EVENT,
} as const satisfies Record<string, ReasonUse>;

/** Client and AccessPolicy resources alike: they become records in their box's database (controllers/records.ts). */
const record = {
  /** Ready=True: the record in the box's database is as the spec says. */
  Reconciled: READY,
  /** Ready=False: the namespace has no Box. Create one (e.g. `kubectl apply -n <namespace> -f examples/box.yaml`). */
  BoxNotFound: NOT_READY,
  /** Ready=False, without a Warning Event (the Box reports its own): the namespace's Box is not ready. Its Ready condition says why. */
  BoxNotReady: NOT_READY,
  /** Ready=False: the spec is not a valid record for the REST API's schema. Fix the field the message names. */
  InvalidSpec: NOT_READY,
  /** Ready=False: the record of this id is managed by another resource. Delete that resource first, or choose another name. */
  OwnedElsewhere: NOT_READY,
  /**
   * Ready=False: the name is one of the records the box creates for itself (its root and admin UI clients and their policies);
   * nothing is written. Choose another name.
   */
  ReservedName: NOT_READY,
  /** Ready=False: writing the record failed (the message says how); retried with backoff. */
  ReconcileError: NOT_READY,
  /** Normal Event: a record of this id created through the REST API is managed by this resource from now on. */
  Adopted: NORMAL_EVENT,
  /** Normal Event: the record was changed or deleted outside Kubernetes, and restored as the spec says. */
  DriftRepaired: NORMAL_EVENT,
} as const satisfies Record<string, ReasonUse>;

const client = {
  ...record,
  /**
   * Ready=False: auth.workload binds a ServiceAccount of a namespace the Box does not allow, and the client has no record in the
   * box (one written before is removed). A cluster admin may add the namespace to the Box's spec.workloadNamespaces; or bind
   * ServiceAccounts of the box's namespace.
   */
  ServiceAccountNamespaceNotAllowed: NOT_READY,
  /**
   * Ready=False: a client_credentials client has no secret source. Set spec.secretRef, remove generateSecret: false, or bind
   * ServiceAccounts in auth.workload.
   */
  SecretRequired: NOT_READY,
  /** Ready=False: the Secret spec.secretRef names does not exist. Create it. */
  SecretNotFound: NOT_READY,
  /**
   * Ready=False: the client's Secret has no such key (the message lists those it has). Set spec.secretRef.key or add the key;
   * for a generated Secret, delete it to have a new one generated.
   */
  SecretKeyNotFound: NOT_READY,
  /** Ready=False: the client secret is shorter than 8 characters. Put a longer one into the Secret. */
  SecretTooShort: NOT_READY,
  /**
   * Ready=False: the Secret the operator would generate for the client exists and is not the operator's. Set spec.secretRef to
   * use it, or delete it.
   */
  SecretConflict: NOT_READY,
} as const satisfies Record<string, ReasonUse>;

const accessPolicy = {
  ...record,
  /** Ready=False: the policy's JSON Schema or matcho pattern does not compile; it is not written, since it would allow nothing. Fix it. */
  InvalidPolicy: NOT_READY,
} as const satisfies Record<string, ReasonUse>;

/** Every reason of every kind, with where it appears: what the README's tables are checked against. */
export const REASONS = { Box: box, Client: client, AccessPolicy: accessPolicy } as const;
export type ReasonKind = keyof typeof REASONS;

type Names<T> = { readonly [K in keyof T]: K };
const namesOf = <T extends Record<string, ReasonUse>>(uses: T): Names<T> =>
  Object.freeze(Object.fromEntries(Object.keys(uses).map((name) => [name, name]))) as Names<T>;

export const BoxReason = namesOf(box);
/** The reasons both Client and AccessPolicy resources report. */
export const RecordReason = namesOf(record);
export const ClientReason = namesOf(client);
export const AccessPolicyReason = namesOf(accessPolicy);

/** Any reason of any kind: a condition's reason is one of these, never a string made up on the spot. */
export type Reason = keyof typeof box | keyof typeof client | keyof typeof accessPolicy;
