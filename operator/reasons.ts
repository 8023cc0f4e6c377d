// The condition types and reasons the operator writes into status.conditions
// and Events. They are API: `kubectl wait --for=condition=Ready`, alerts and
// GitOps tools key on them, so they live here, each said once with where it is
// set and what a person does about it, and the tables of
// docs/kubernetes/conditions.md are checked against REASONS by a unit test
// (test/unit/operator/reasons.test.ts). A Ready=False reason is also the
// reason of the Warning Event written when it is set, and a Ready=True reason
// that of the Normal Event written when the resource becomes ready.
//
// Next to Ready, every resource has the two conditions of kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus), which Flux, kpt and Argo CD's health
// checks (charts/boxauth/argocd/) read to tell "still working" from "stuck":
// Reconciling=True while the operator works on a new generation or waits for
// something that may still appear (kstatus: InProgress), Stalled=True when it
// cannot go on until a person changes something (kstatus: Failed). So each
// Ready=False reason says which of the two it is; both carry the reason of the
// outcome, and are False (with the Ready reason) once the resource is ready.
// Before the operator's first look, a resource reads status.observedGeneration
// 0 (the CRDs' default), which kstatus takes as InProgress too.

export const ConditionType = {
  /** Every resource: it is in place as its spec says (True), or why not (False). */
  Ready: 'Ready',
  /** Every resource: the operator works on a new generation, or waits for something that may still appear (True). */
  Reconciling: 'Reconciling',
  /** Every resource: the operator cannot go on until a person changes something (True). */
  Stalled: 'Stalled',
  /** A Box: whether any of its API pods is available. */
  Available: 'Available',
  /**
   * A Client whose SAML metadata is at a URL (spec.saml.metadata.url): whether the box could fetch and read it
   * (the box fetches it, through its own guard; the operator reads what it recorded). The Client stays Ready for its other uses.
   */
  SamlMetadataReady: 'SamlMetadataReady',
} as const;
export type ConditionType = (typeof ConditionType)[keyof typeof ConditionType];

/** What a Ready=False reason means for kstatus: the operator is at it or waits (Reconciling), or needs a person (Stalled). */
export type Progress = typeof ConditionType.Reconciling | typeof ConditionType.Stalled;

/**
 * Where a reason appears: as a condition's reason with that status (a Ready=False reason also as the reason of
 * Reconciling=True or Stalled=True: `then`), or only as the reason of a Normal Event.
 */
export type ReasonUse = { condition: ConditionType; status: 'True' | 'False' | 'Unknown'; then?: Progress } | { event: 'Normal' };

const READY = { condition: ConditionType.Ready, status: 'True' } as const;
/** Ready=False, Reconciling=True: the operator retries, or something it waits for may still appear. */
const WAITING = { condition: ConditionType.Ready, status: 'False', then: ConditionType.Reconciling } as const;
/** Ready=False, Stalled=True: nothing changes until a person changes the resource or what it names. */
const STALLED = { condition: ConditionType.Ready, status: 'False', then: ConditionType.Stalled } as const;
/** Reconciling=True alone: a new generation is being worked on; Ready keeps its value (and older observedGeneration). */
const PROGRESSING = { condition: ConditionType.Reconciling, status: 'True' } as const;
const AVAILABLE = { condition: ConditionType.Available, status: 'True' } as const;
const UNAVAILABLE = { condition: ConditionType.Available, status: 'False' } as const;
const NORMAL_EVENT = { event: 'Normal' } as const;
const SAML_METADATA_READ = { condition: ConditionType.SamlMetadataReady, status: 'True' } as const;
const SAML_METADATA_REFUSED = { condition: ConditionType.SamlMetadataReady, status: 'False' } as const;
const SAML_METADATA_UNKNOWN = { condition: ConditionType.SamlMetadataReady, status: 'Unknown' } as const;

/** Every kind: the reconcile of a generation the status does not show yet has begun. */
const progressing = {
  /**
   * Reconciling=True: the operator has begun on a new generation of the spec (or a new resource); Ready and
   * status.observedGeneration still tell of the previous one until it is done. Nothing to do.
   */
  Progressing: PROGRESSING,
} as const satisfies Record<string, ReasonUse>;

const box = {
  ...progressing,
  /** Ready=True: the schema, Secrets, Deployment and Service are in place; status.url is where the box serves. */
  Provisioned: READY,
  /**
   * Ready=False, Stalled=True: the namespace already has an older Box, and a namespace holds one box; this one is left alone
   * (no finalizer, no status fields). Delete it, or create it in another namespace.
   */
  DuplicateBox: STALLED,
  /** Ready=False, Reconciling=True: spec.database.secretRef names a Secret that does not exist. Create it, or fix the name; retried with backoff. */
  DatabaseSecretNotFound: WAITING,
  /** Ready=False, Stalled=True: the Secret of spec.database.secretRef holds no postgres:// URL under its key. Fix it, or spec.database.secretRef.key. */
  DatabaseSecretInvalid: STALLED,
  /**
   * Ready=False, Reconciling=True: spec.database.cluster names a CloudNativePG Cluster that does not exist in the Box's namespace (or
   * CloudNativePG's CRDs are not installed). Create it, or fix the name; retried with backoff.
   */
  DatabaseClusterNotFound: WAITING,
  /**
   * Ready=False, Reconciling=True: the Cluster exists, but not yet its application Secret (with username and password) or its -rw
   * Service, which CloudNativePG makes as it creates the Cluster. Wait for it (`kubectl get cluster`); the Secret brings the Box back.
   */
  DatabaseClusterNotReady: WAITING,
  /**
   * Ready=False, Reconciling=True: spec.database.cluster.pooler names a Pooler that does not exist, or whose Service CloudNativePG has
   * not made yet. Create it, fix the name, or remove it to connect to the -rw Service; retried with backoff.
   */
  DatabasePoolerNotFound: WAITING,
  /**
   * Ready=False, Stalled=True: the Pooler of spec.database.cluster.pooler serves another Cluster, or is not of type rw (it would send the
   * box's writes to standbys). Name a Pooler of type rw of that Cluster.
   */
  DatabasePoolerInvalid: STALLED,
  /**
   * Ready=False, Reconciling=True: spec.tls.secretName names a Secret that does not exist (yet: cert-manager writes it once the Certificate is
   * issued), or that has no tls.crt and tls.key making a pair. The Service and Deployment are left as they are (running pods
   * keep serving what they have). Create or fix the Secret, or the name; the Box is looked at again when the Secret appears
   * or changes.
   */
  TLSSecretNotReady: WAITING,
  /**
   * Ready=False, Reconciling=True: spec.smtp.passwordSecretRef names a Secret that does not exist, or that has no such key. The
   * Service and Deployment are left as they are. Create or fix the Secret, or the reference; the Box is looked at again when
   * the Secret appears or changes.
   */
  SMTPSecretNotReady: WAITING,
  /**
   * Ready=False, Stalled=True: the operator pins the box image (BOXAUTH_OPERATOR_PIN_BOX_IMAGE, the chart's boxImage.pinned) and spec.image
   * names another; nothing is made or changed (a running box keeps its Deployment as it was). Remove spec.image, or ask a cluster admin.
   */
  ImageNotAllowed: STALLED,
  /**
   * Ready=False, Stalled=True: a ServiceAccount of the box's name exists and is not the operator's. Set spec.serviceAccountName to run the
   * API pods as it, or delete it.
   */
  ServiceAccountConflict: STALLED,
  /**
   * Ready=False, Stalled=True: the box has tokens reviewed by the API server (TokenReview), and the ClusterRoleBinding of
   * system:auth-delegator the chart makes (BOXAUTH_OPERATOR_TOKEN_REVIEW_BINDING) does not exist. The operator may not
   * create one: install or upgrade the chart (or apply install.yaml) again.
   */
  TokenReviewBindingMissing: STALLED,
  /**
   * Ready=False, Stalled=True: a schema or role of the box's name is not marked as this namespace's, and the operator changed nothing. If it
   * holds this box's data, mark it (the message gives the statements); otherwise rename or drop it. Looked at again at each
   * resync, not retried in a loop.
   */
  DatabaseOwnedElsewhere: STALLED,
  /**
   * Ready=False, Reconciling=True: the database or the API server failed (the message says how); retried with backoff. Usually passes by itself;
   * when it stays, check the operator's DATABASE_URL and its RBAC.
   */
  ProvisioningFailed: WAITING,
  /**
   * Ready=True: spec.serving is Hosted, the host answers for the box, and its Service is an ExternalName of the host's
   * (status.host names the host). Nothing to do.
   */
  Hosted: READY,
  /**
   * Ready=False, Stalled=True: spec.serving is Hosted and the Box asks for what a host cannot do for one box (spec.tls,
   * spec.smtp.templates, a spec.port other than 8080, another spec.image, spec.serviceAccountName, tokenreview), or
   * its base URL's host name is another hosted box's; nothing is changed (a dedicated box keeps its Deployment). The
   * message names the field: remove it, or set spec.serving to Dedicated.
   */
  NotHostable: STALLED,
  /**
   * Ready=False, Reconciling=True: spec.serving is Hosted, the box is in the host's registry, and the host does not
   * answer for it yet (it prepares a new box: migrations, keys; or its pods are not up). A box moving from its
   * Deployment keeps it, and its Service, until the host does. Looked at again within seconds; when it stays, look at
   * the host's pods and logs (kubectl logs -n <operator namespace> deployment/boxauth-host).
   */
  HostNotAnswering: WAITING,
  /**
   * Ready=False, Reconciling=True: spec.serving went from Hosted to Dedicated; the host serves the box until one of its
   * own pods is available, then its Service points at them again and its entry leaves the registry. Nothing to do;
   * when it stays, look at the Deployment's pods.
   */
  MovingToDedicated: WAITING,
  /** Available=True: at least one API pod is available. */
  MinimumReplicasAvailable: AVAILABLE,
  /** Available=False: none of the API pods is available; `kubectl get pods -l app.kubernetes.io/instance=<box>` shows why. */
  NoPodsAvailable: UNAVAILABLE,
  /** Available=False: spec.replicas is 0. Set it to serve. */
  ScaledToZero: UNAVAILABLE,
  /** Available=True: the box is hosted, and the host answered for it at the operator's last look. */
  HostAnswering: AVAILABLE,
  /** Normal Event: spec.jwtAlg changed and a new signing key was generated; the API keeps publishing the old one. Nothing to do. */
  SigningKeyReplaced: NORMAL_EVENT,
} as const satisfies Record<string, ReasonUse>;

/** Client, AccessPolicy, App, IdentityProvider and Webhook resources alike: they become records in their box's database (controllers/records.ts). */
const record = {
  ...progressing,
  /** Ready=True: the record in the box's database is as the spec says. */
  Reconciled: READY,
  /** Ready=False, Reconciling=True: the namespace has no Box. Create one (e.g. `kubectl apply -n <namespace> -f examples/box.yaml`). */
  BoxNotFound: WAITING,
  /** Ready=False, Reconciling=True, without a Warning Event (the Box reports its own): the namespace's Box is not ready. Its Ready condition says why. */
  BoxNotReady: WAITING,
  /** Ready=False, Stalled=True: the spec is not a valid record for the REST API's schema. Fix the field the message names. */
  InvalidSpec: STALLED,
  /** Ready=False, Stalled=True: the record of this id is managed by another resource. Delete that resource first, or choose another name. */
  OwnedElsewhere: STALLED,
  /**
   * Ready=False, Stalled=True: the name is one of the records the box creates for itself (its root and admin UI clients and their policies);
   * nothing is written. Choose another name.
   */
  ReservedName: STALLED,
  /** Ready=False, Reconciling=True: writing the record failed (the message says how); retried with backoff. */
  ReconcileError: WAITING,
  /** Normal Event: a record of this id created through the REST API is managed by this resource from now on. */
  Adopted: NORMAL_EVENT,
  /** Normal Event: the record was changed or deleted outside Kubernetes, and restored as the spec says. */
  DriftRepaired: NORMAL_EVENT,
} as const satisfies Record<string, ReasonUse>;

const client = {
  ...record,
  /**
   * Ready=False, Stalled=True: auth.workload binds a ServiceAccount of a namespace the Box does not allow, and the client has no record in the
   * box (one written before is removed). A cluster admin may add the namespace to the Box's spec.workloadNamespaces; or bind
   * ServiceAccounts of the box's namespace.
   */
  ServiceAccountNamespaceNotAllowed: STALLED,
  /**
   * Ready=False, Stalled=True: a client_credentials client, or one whose token_endpoint_auth_method is client_secret_basic or
   * client_secret_post, has no secret source. Set spec.secretRef, remove generateSecret: false, or (client_credentials) bind
   * ServiceAccounts in auth.workload.
   */
  SecretRequired: STALLED,
  /** Ready=False, Reconciling=True: the Secret spec.secretRef names does not exist. Create it. */
  SecretNotFound: WAITING,
  /**
   * Ready=False, Stalled=True: the client's Secret has no such key (the message lists those it has). Set spec.secretRef.key or add the key;
   * for a generated Secret, delete it to have a new one generated.
   */
  SecretKeyNotFound: STALLED,
  /** Ready=False, Stalled=True: the client secret is shorter than 8 characters. Put a longer one into the Secret. */
  SecretTooShort: STALLED,
  /**
   * Ready=False, Stalled=True: the Secret the operator would generate for the client exists and is not the operator's. Set spec.secretRef to
   * use it, or delete it.
   */
  SecretConflict: STALLED,
  /**
   * Ready=False, Stalled=True: a claim of spec.claims cannot be (its expression does not parse, type-check or stay under the cost limit,
   * or its name is one the box alone states, such as sub); nothing is written. Fix it (the message names the claim and the problem).
   */
  InvalidClaims: STALLED,
  /**
   * Ready=False, Stalled=True: spec.saml.metadata.xml is not an SP's SAML 2.0 metadata (not XML, refused by the OASIS schema, no
   * SPSSODescriptor or HTTP-POST AssertionConsumerService, a certificate that is none), or encryptAssertions has no certificate to
   * encrypt to; nothing is written. Fix the document (the message says what is wrong).
   */
  InvalidSamlMetadata: STALLED,
  /**
   * SamlMetadataReady=True: the box fetched the metadata at spec.saml.metadata.url and read it as an SP's (the message says its entity ID,
   * AssertionConsumerServices, SingleLogoutService bindings and when its first certificate expires). Nothing to do.
   */
  SamlMetadataRead: SAML_METADATA_READ,
  /**
   * SamlMetadataReady=False: the box could not fetch the metadata at spec.saml.metadata.url (an address its guard refuses, no answer, an
   * answer but 200, not XML, too large; the message says which). Nobody signs in to the app until it can; the Client stays Ready (its
   * OAuth side works). Fix the URL or the server, or allow the address in the box's settings; the box looks again within a minute.
   */
  SamlMetadataUnreachable: SAML_METADATA_REFUSED,
  /**
   * SamlMetadataReady=False: the document at spec.saml.metadata.url is not an SP's SAML 2.0 metadata (the message says what is wrong).
   * Nobody signs in to the app until it is; the Client stays Ready. Fix the document; the box looks again within a minute.
   */
  SamlMetadataInvalid: SAML_METADATA_REFUSED,
  /** SamlMetadataReady=Unknown: the box has not fetched the metadata at spec.saml.metadata.url yet (it does so within seconds). Nothing to do. */
  SamlMetadataPending: SAML_METADATA_UNKNOWN,
} as const satisfies Record<string, ReasonUse>;

const accessPolicy = {
  ...record,
  /** Ready=False, Stalled=True: the policy's JSON Schema or matcho pattern does not compile; it is not written, since it would allow nothing. Fix it. */
  InvalidPolicy: STALLED,
} as const satisfies Record<string, ReasonUse>;

const app = {
  ...record,
  /**
   * Ready=False, Stalled=True: the App's audience (spec.audience, else its first url) is the box's own or another App's, so tokens
   * would pass at both; nothing is written. Give it an audience of its own; looked at again at each resync.
   */
  AudienceTaken: STALLED,
  /**
   * Ready=False, Stalled=True: a claim of spec.claims cannot be (its expression does not parse, type-check or stay under the cost limit,
   * or its name is one the box alone states, such as sub); nothing is written. Fix it (the message names the claim and the problem).
   */
  InvalidClaims: STALLED,
} as const satisfies Record<string, ReasonUse>;

const identityProvider = {
  ...record,
  /**
   * Ready=False, Reconciling=True: the Secret spec.secretRef names does not exist. Create it; the IdentityProvider is looked at again
   * when the Secret appears.
   */
  SecretNotFound: WAITING,
  /**
   * Ready=False, Stalled=True: the provider's Secret has no such key (the message lists those it has; the default is client-secret, for
   * ldap bind-password). Set spec.secretRef.key or add the key; the IdentityProvider is looked at again when the Secret changes.
   */
  SecretKeyNotFound: STALLED,
} as const satisfies Record<string, ReasonUse>;

const webhook = {
  ...record,
  /** Ready=False, Stalled=True: spec.secretRef is missing; a Webhook is signed, so it needs a signing secret. Set spec.secretRef. */
  SecretRequired: STALLED,
  /** Ready=False, Reconciling=True: the Secret spec.secretRef names does not exist. Create it; the Webhook is looked at again when it appears. */
  SecretNotFound: WAITING,
  /**
   * Ready=False, Stalled=True: the Webhook's Secret has no such key (the message lists those it has; the default is signing-secret). Set
   * spec.secretRef.key or add the key; the Webhook is looked at again when the Secret changes.
   */
  SecretKeyNotFound: STALLED,
  /**
   * Ready=False, Stalled=True: the signing secret is no Standard Webhooks secret ("whsec_" and the base64 of 24 to 64 random bytes); the
   * Webhook has no record (one written before is removed). Put a good one in the Secret.
   */
  InvalidSecret: STALLED,
  /**
   * Ready=False, Stalled=True: the box would not send to spec.url (not https, or an address its settings do not allow); the Webhook has no
   * record (one written before is removed). Fix the URL, or allow the address in the box's settings.
   */
  UrlRefused: STALLED,
} as const satisfies Record<string, ReasonUse>;

const hook = {
  ...record,
  /** Ready=False, Stalled=True: neither spec.secretRef nor spec.boxToken: a hook could not check its calls. Set one (or both). */
  SecretRequired: STALLED,
  /** Ready=False, Reconciling=True: the Secret spec.secretRef names does not exist. Create it; the Hook is looked at again when it appears. */
  SecretNotFound: WAITING,
  /**
   * Ready=False, Stalled=True: the Hook's Secret has no such key (the message lists those it has; the default is signing-secret). Set
   * spec.secretRef.key or add the key; the Hook is looked at again when the Secret changes.
   */
  SecretKeyNotFound: STALLED,
  /**
   * Ready=False, Stalled=True: the signing secret is no Standard Webhooks secret ("whsec_" and the base64 of 24 to 64 random bytes); the
   * Hook has no record (one written before is removed). Put a good one in the Secret.
   */
  InvalidSecret: STALLED,
  /**
   * Ready=False, Stalled=True: spec.url is the box itself, or spec.matchConditions do not compile, or spec.caBundle holds no
   * certificate; the Hook has no record (one written before is removed). The message says which; fix it.
   */
  HookRefused: STALLED,
} as const satisfies Record<string, ReasonUse>;

/** Every reason of every kind, with where it appears: what docs/kubernetes/conditions.md's tables are checked against. */
export const REASONS = {
  Box: box,
  Client: client,
  AccessPolicy: accessPolicy,
  App: app,
  IdentityProvider: identityProvider,
  Webhook: webhook,
  Hook: hook,
} as const;
export type ReasonKind = keyof typeof REASONS;

type Names<T> = { readonly [K in keyof T]: K };
const namesOf = <T extends Record<string, ReasonUse>>(uses: T): Names<T> =>
  Object.freeze(Object.fromEntries(Object.keys(uses).map((name) => [name, name]))) as Names<T>;

/** The reason every kind's Reconciling condition has while a new generation is worked on. */
export const ReconcilingReason = namesOf(progressing);
export const BoxReason = namesOf(box);
/** The reasons Client, AccessPolicy, App, IdentityProvider and Webhook resources all report. */
export const RecordReason = namesOf(record);
export const ClientReason = namesOf(client);
export const AccessPolicyReason = namesOf(accessPolicy);
export const AppReason = namesOf(app);
export const IdentityProviderReason = namesOf(identityProvider);
export const WebhookReason = namesOf(webhook);
export const HookReason = namesOf(hook);

/** Any reason of any kind: a condition's reason is one of these, never a string made up on the spot. */
export type Reason =
  | keyof typeof box
  | keyof typeof client
  | keyof typeof accessPolicy
  | keyof typeof app
  | keyof typeof identityProvider
  | keyof typeof webhook
  | keyof typeof hook;

/** Reconciling or Stalled: what a Ready=False reason of the kind says to kstatus (a reason of no Ready=False use is a bug). */
export function progressOf(kind: string, reason: Reason): Progress {
  const use: ReasonUse | undefined = (REASONS as Record<string, Record<string, ReasonUse>>)[kind]?.[reason];
  if (!use || !('then' in use) || !use.then) throw new Error(`${kind} reason ${reason} is not a Ready=False reason`);
  return use.then;
}
