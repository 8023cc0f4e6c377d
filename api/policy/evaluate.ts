// The policies of a box in memory, by the target they guard (the box's own API, or
// one app: AccessPolicy.app) and by the subjects they link to, and the questions
// asked of them: may this token make this request on the box's API, and does this
// app's policy allow this request (api/decision/). A policy sits in its own
// target's index only, so a policy for app A can never decide for app B or for the
// box's API: which target it guards is part of its identity (docs/architecture.md §7).
// Policies OR together; with none that applies, the answer is no.
//
// A token speaks for its client alone (client_credentials, workload identity), or
// for a person through a client (a browser or device sign-in, and its refreshes).
// The second kind acts within what BOTH were granted (RFC 9700 §2.3, privilege
// restriction; docs/architecture.md §7): the person's side (policies linked to the user,
// to one of their groups, or global) and the client's side (policies linked to
// that client, never global ones — a global policy that tests the user's groups
// must not let every app those people sign in to act as them). Signing in to an
// app therefore never hands the app the person's rights on the box's own API.
import { Snapshot } from '../cache/snapshot.js';
import type { Pool } from '../db/pool.js';
import type { ChangeFeed } from '../db/notify.js';
import type { PolicyOutcome } from '../store/decisions.js';
import { accessPolicies } from '../store/policies.js';
import type { AccessPolicy } from '../types.js';
import { DecisionLine, inTurn, stoppedNow, withDecision } from './budget.js';
import { appPerson, type ClaimBindings, type ClaimExpressions } from './claims.js';
import { compilePolicy, createPolicyAjv, type Rule } from './engines.js';
import type {
  AppRequest,
  AuthzenRequest,
  BoxApiRequest,
  ExchangeRequest,
  PolicyObject,
  RegistrationRequest,
  SsfRequest,
} from './requests.js';

export type { PolicyOutcome };

/** Whom a token speaks for. */
export interface Subject {
  clientId: string;
  /** The person, when a person's sign-in issued the token to the client (a delegated token). */
  user: { id: string; groups: { id: string; name: string }[] } | null;
  /**
   * The client a token exchange's subject token was issued to, when the token
   * speaks for that client and not a person (RFC 8693): the token acts within
   * what both clients were granted, as a delegated token within what both the
   * person and the client were.
   */
  forClient?: string;
}

/**
 * The answer: which policies allowed it, or which side no policy allowed
 * (`client`: a delegated token's client may not act for its users this way).
 */
export type Verdict = { allowed: true; policies: string[] } | { allowed: false; refusedBy: 'person' | 'client' };

interface CompiledPolicy {
  id: string;
  rule: Rule;
  /** Engine `allow`: it allows whatever request its subjects make. */
  unconditional: boolean;
  link: readonly { id: string; resourceType: string }[];
  /** An App policy's least sign-in (AccessPolicy.acr). */
  acr: string | undefined;
  /** The scopes an App policy wants the token to carry (AccessPolicy.scope). */
  scope: readonly string[] | undefined;
}

/** Which policies count: those that allow the request at hand, or (unconditional) those of engine allow. */
type Allows = (policy: CompiledPolicy) => boolean;

/** The verdict at an app: the policies that allowed it (none: denied), and every policy that applied. */
export interface AppVerdict {
  allowed: boolean;
  outcomes: PolicyOutcome[];
}

/** The App whose policies decide: its id, and the claims it shapes of a person (App.claims), which its policies see. */
export interface PoliciedApp {
  id: string;
  claims?: ClaimExpressions | undefined;
}

/**
 * A question to an App's policies, before the App's view of the person is made: the request object
 * but its `user`, and the person behind the caller with the grant the App's claims are shaped over
 * (null: nobody). decideApp makes `user` (./claims.ts appPerson), so that no App's policy ever
 * sees more of a person than the App may, and the claims spend the decision's budget.
 */
export interface AppQuestion {
  request: Omit<AppRequest, 'user'> | Omit<AuthzenRequest, 'user'>;
  person: ClaimBindings | null;
}

/** The verdict at an app, and the request object its policies saw (what the decision's record keeps). */
export interface AppDecided extends AppVerdict {
  request: AppRequest | AuthzenRequest;
}

/** A policy of the box's API as `PolicyIndex.weigh` found it: which side it counts for, and whether it allows the request. */
export interface Weighed {
  side: 'person' | 'client';
  id: string;
  allows: boolean;
}

/** Who is calling at an app: the token's client and person, or nobody (no credential). */
export interface AppSubject {
  clientId: string | null;
  user: { id: string; groups: { id: string; name: string }[] } | null;
  /** Whether the caller's sign-in meets a policy's `acr` (api/credentials/acr.ts meets; false without a sign-in). */
  signedInAtLeast: (acr: string) => boolean;
  /** Whether the caller's token carries each of a policy's `scope` (api/decision/request.ts appSubjectOf). */
  carries: (scope: readonly string[]) => boolean;
}

/** The policies of one target: the box's own API, or one app. A policy sits in its target's only. */
class Target {
  readonly global: CompiledPolicy[] = [];
  readonly linked = new Map<string, CompiledPolicy[]>();
  readonly dryRun: CompiledPolicy[] = [];

  add(policy: CompiledPolicy, dryRun: boolean): void {
    if (dryRun) return void this.dryRun.push(policy);
    if (!policy.link.length) this.global.push(policy);
    for (const link of policy.link) {
      const key = `${link.resourceType}/${link.id}`;
      this.linked.set(key, [...(this.linked.get(key) ?? []), policy]);
    }
  }

  /** Policies linked to any of `keys` (`<resourceType>/<id>`), and the global ones when asked. */
  linkedTo(keys: string[], withGlobal: boolean): CompiledPolicy[] {
    return [...new Set([...(withGlobal ? this.global : []), ...keys.flatMap((k) => this.linked.get(k) ?? [])])];
  }

  /** The policy that `allows` among those of one side, if any. */
  firstAllowing(keys: string[], withGlobal: boolean, allows: Allows): string | undefined {
    // One client's own policies (a token exchange, a Txn-Token): its list as it is, in the same order, without a copy.
    if (!withGlobal && keys.length === 1) return this.linked.get(keys[0]!)?.find(allows)?.id;
    return this.linkedTo(keys, withGlobal).find(allows)?.id;
  }
}

const BOX = '';
/**
 * The link keys that reach a subject. A Group link names a group by id or by name; a link of digits
 * is an id, never a name: else a group someone names "2" would take the policies of group 2.
 */
const keysOf = (clientId: string | null, user: AppSubject['user']): string[] => [
  ...(clientId !== null ? [`Client/${clientId}`] : []),
  ...(user
    ? [`User/${user.id}`, ...user.groups.flatMap((g) => [`Group/${g.id}`, ...(/^\d+$/.test(g.name) ? [] : [`Group/${g.name}`])])]
    : []),
];

/**
 * The policies of one set, compiled: what `Policies` holds of the box's (and keeps current), and
 * what `boxauth policy test` builds of a directory of manifests or of a box's AccessPolicies, so
 * that a case is decided by the code that decides the box's requests.
 */
export class PolicyIndex {
  private readonly targets = new Map<string, Target>();
  private readonly rules = new Map<string, CompiledPolicy>();

  constructor(policies: AccessPolicy[], onError: (id: string, err: Error) => void) {
    const ajv = createPolicyAjv();
    for (const policy of policies) {
      let compiled: CompiledPolicy;
      try {
        compiled = {
          id: policy.id,
          rule: compilePolicy(policy, ajv),
          unconditional: policy.engine === 'allow',
          link: policy.link ?? [],
          acr: policy.acr,
          scope: policy.scope && [...new Set(policy.scope)],
        };
      } catch (err) {
        onError(policy.id, err as Error); // a broken policy allows nothing
        continue;
      }
      this.rules.set(policy.id, compiled);
      this.target(policy.app ?? BOX, true)!.add(compiled, policy.dryRun === true);
    }
  }

  private target(key: string, create = false): Target | undefined {
    let target = this.targets.get(key);
    if (!target && create) this.targets.set(key, (target = new Target()));
    return target;
  }

  /** The box's own API (see the top of this file). Dry-run policies of the box decide nothing here. */
  decide(subject: Subject, request: BoxApiRequest): Verdict {
    return withDecision(() => this.decideBy(subject, (p) => p.rule.test(request)));
  }

  /**
   * Whether `allow` policies alone allow `subject` everything on the box's API, by the rule
   * of decide: what lets a writer grant others rights there (api/policy/writers.ts).
   */
  unconditional(subject: Subject): boolean {
    return this.decideBy(subject, (p) => p.unconditional).allowed;
  }

  private decideBy(subject: Subject, allows: Allows): Verdict {
    const box = this.target(BOX) ?? new Target();
    const client = [`Client/${subject.clientId}`];
    if (!subject.user) {
      const id = box.firstAllowing(client, true, allows);
      if (id === undefined) return { allowed: false, refusedBy: 'client' };
      if (subject.forClient === undefined || subject.forClient === subject.clientId) return { allowed: true, policies: [id] };
      const forSubject = box.firstAllowing([`Client/${subject.forClient}`], true, allows);
      return forSubject !== undefined ? { allowed: true, policies: [forSubject, id] } : { allowed: false, refusedBy: 'person' };
    }
    const person = keysOf(null, subject.user);
    const forPerson = box.firstAllowing(person, true, allows);
    if (forPerson === undefined) return { allowed: false, refusedBy: 'person' };
    const forClient = box.firstAllowing(client, false, allows);
    if (forClient === undefined) return { allowed: false, refusedBy: 'client' };
    return { allowed: true, policies: [forPerson, forClient] };
  }

  /**
   * Each policy of the box's API that `decide` (with `exchange`: `decideExchange`) tries for
   * `subject`, the side it counts for and whether it allows `request`: what explains a refusal
   * (`boxauth policy test`). Never on the hot path.
   */
  weigh(subject: Subject, request: BoxApiRequest | ExchangeRequest, exchange = false): Weighed[] {
    const box = this.target(BOX) ?? new Target();
    const client = [`Client/${subject.clientId}`];
    const sides: [Weighed['side'], CompiledPolicy[]][] = exchange
      ? [['client', box.linkedTo(client, false)]]
      : subject.user
        ? [
            ['person', box.linkedTo(keysOf(null, subject.user), true)],
            ['client', box.linkedTo(client, false)],
          ]
        : [
            ['client', box.linkedTo(client, true)],
            ...(subject.forClient === undefined || subject.forClient === subject.clientId
              ? []
              : [['person', box.linkedTo([`Client/${subject.forClient}`], true)] as [Weighed['side'], CompiledPolicy[]]]),
          ];
    return withDecision(() => sides.flatMap(([side, policies]) => policies.map((p) => ({ side, id: p.id, allows: p.rule.test(request) }))));
  }

  /**
   * Whether `clientId` may make the token exchange `request` (RFC 8693): only the
   * box's policies linked to that client decide, never global ones. A global
   * policy that lets a group of people use the API must not let every client
   * holding one of their tokens turn it into another (docs/architecture.md §10).
   */
  decideExchange(clientId: string, request: ExchangeRequest): Verdict {
    const id = withDecision(() => this.target(BOX)?.firstAllowing([`Client/${clientId}`], false, (p) => p.rule.test(request)));
    return id !== undefined ? { allowed: true, policies: [id] } : { allowed: false, refusedBy: 'client' };
  }

  /**
   * Whether `clientId` may have the Transaction Token `request` asks for
   * (draft-ietf-oauth-transaction-tokens-10 §13.10: "A TTS should be selective in which workloads can
   * successfully request a Txn-Token"). Deny by default: only the box's policies linked to that
   * client decide, and of those only the ones with a condition: an `allow` linked to a client for
   * its other exchanges says nothing about which transactions it may assert.
   */
  decideTxnToken(clientId: string, request: ExchangeRequest): Verdict {
    const id = withDecision(() =>
      this.target(BOX)?.firstAllowing([`Client/${clientId}`], false, (p) => !p.unconditional && p.rule.test(request)),
    );
    return id !== undefined ? { allowed: true, policies: [id] } : { allowed: false, refusedBy: 'client' };
  }

  /**
   * Whether the box admits a client that named itself (a Client ID Metadata Document, a dynamic
   * registration: RegistrationRequest). Deny by default: only the box's policies that are global
   * or linked to that client id decide, and of those only the ones with a condition (json-schema,
   * matcho, cel): engine `allow` says nothing about which hosts may be clients, so a global
   * `allow` written for the box's API admits no agent.
   */
  decideRegistration(request: RegistrationRequest): Verdict {
    const keys = [`Client/${request.registration.client_id}`];
    const id = withDecision(() => this.target(BOX)?.firstAllowing(keys, true, (p) => !p.unconditional && p.rule.test(request)));
    return id !== undefined ? { allowed: true, policies: [id] } : { allowed: false, refusedBy: 'client' };
  }

  /**
   * Whether a Shared Signals receiver may have a person's events (SsfRequest). Deny by default: only
   * the box's policies linked to the receiver's client decide, never global ones (a policy that lets
   * everyone read the box's metadata must not hand every receiver everyone's events), and of those
   * only the ones with a condition: an `allow` written to let the receiver manage its streams says
   * nothing about whose events it may have.
   */
  decideSsf(request: SsfRequest): Verdict {
    const keys = [`Client/${request.ssf.receiver}`];
    const id = withDecision(() => this.target(BOX)?.firstAllowing(keys, false, (p) => !p.unconditional && p.rule.test(request)));
    return id !== undefined ? { allowed: true, policies: [id] } : { allowed: false, refusedBy: 'client' };
  }

  /**
   * Whether a SAML app (Client.saml) may be given an assertion of a person: deny by default, only
   * the policies linked to the app's client decide, never global ones (a global policy written for
   * the box's API lets nobody into an app), and of those every engine: `allow` admits everyone
   * signed in, a condition (json-schema, matcho, cel) the people it matches. The request is the box
   * API's shape with `request-method` sign-in and `uri` saml:sign-in, and `user` the person.
   */
  decideSamlSignIn(clientId: string, request: BoxApiRequest): Verdict {
    const keys = [`Client/${clientId}`];
    const id = withDecision(() => this.target(BOX)?.firstAllowing(keys, false, (p) => p.unconditional || p.rule.test(request)));
    return id !== undefined ? { allowed: true, policies: [id] } : { allowed: false, refusedBy: 'person' };
  }

  /**
   * An app's own policies only: those that name it (global ones apply to every
   * caller of the app, linked ones to their client, user or groups). Policies
   * OR together; none allowing is a denial. Every applicable policy is tried, so
   * the record can say which matched and which did not; dry-run ones too.
   */
  decideApp(app: PoliciedApp, subject: AppSubject, question: AppQuestion): AppDecided {
    return withDecision(() => {
      // The person as the App may see them, made once for all its policies, within the decision's budget.
      const user = question.person && appPerson(app.claims, question.person);
      const request = { ...question.request, user };
      return { ...this.decideAppNow(app.id, subject, request), request };
    });
  }

  private decideAppNow(app: string, subject: AppSubject, request: AppRequest | AuthzenRequest): AppVerdict {
    const target = this.target(app);
    if (!target) return { allowed: false, outcomes: [] };
    // A policy whose rule allows, from a caller whose sign-in is short of its acr, asks for a step-up (and
    // for its scopes too, when the token lacks them: one new authorization brings both); from a token
    // short of its scopes alone, for those scopes.
    const outcome = (p: CompiledPolicy, dryRun: boolean): PolicyOutcome => {
      if (!p.rule.test(request)) {
        const stopped = stoppedNow();
        return { id: p.id, verdict: dryRun ? 'would not allow' : 'does not allow', ...(stopped ? { stopped } : {}) };
      }
      const scope = p.scope !== undefined && !subject.carries(p.scope) ? { scope: [...p.scope] } : {};
      if (p.acr !== undefined && !subject.signedInAtLeast(p.acr))
        return { id: p.id, verdict: dryRun ? 'would need a stronger sign-in' : 'needs a stronger sign-in', acr: p.acr, ...scope };
      if (scope.scope) return { id: p.id, verdict: dryRun ? 'would need more scope' : 'needs more scope', ...scope };
      return { id: p.id, verdict: dryRun ? 'would allow' : 'allows' };
    };
    const outcomes = target.linkedTo(keysOf(subject.clientId, subject.user), true).map((p) => outcome(p, false));
    for (const p of target.dryRun) {
      const applies = !p.link.length || p.link.some((l) => keysOf(subject.clientId, subject.user).includes(`${l.resourceType}/${l.id}`));
      if (applies) outcomes.push(outcome(p, true));
    }
    return { allowed: outcomes.some((o) => o.verdict === 'allows'), outcomes };
  }

  /**
   * The scopes `app`'s policies want (AccessPolicy.scope), sorted: what its metadata document
   * lists (RFC 9728 scopes_supported). A dry-run policy decides nothing, and wants nothing.
   */
  scopesOf(app: string): string[] {
    const target = this.target(app);
    if (!target) return [];
    const policies = [...target.global, ...[...target.linked.values()].flat()];
    return [...new Set(policies.flatMap((p) => p.scope ?? []))].sort();
  }

  /** Why policy `id` did not allow `request` (undefined: it does, or there is no such policy). */
  why(id: string, request: PolicyObject): string | undefined {
    return withDecision(() => this.rules.get(id)?.rule.why(request));
  }
}

export class Policies {
  private readonly index: Snapshot<PolicyIndex>;
  /** The box's decisions waiting for a turn of the event loop: a host's boxes take turns (./budget.ts inTurn). */
  private readonly line = new DecisionLine();

  constructor(pool: Pool, feed: ChangeFeed, onError: (id: string, err: Error) => void) {
    this.index = new Snapshot(feed, ['access_policies'], async () => new PolicyIndex(await accessPolicies.all(pool), onError));
  }

  /** Drops the loaded set; the next question reads the policies afresh. */
  forget(): void {
    this.index.forget();
  }

  private current(): Promise<PolicyIndex> {
    return this.index.get();
  }

  /** Whether `subject` may make `request` on the box's own API, and by which policies (see the top of this file). */
  async decide(subject: Subject, request: BoxApiRequest): Promise<Verdict> {
    const index = await this.current();
    return inTurn(() => index.decide(subject, request), this.line);
  }

  /** Whether `allow` policies alone allow `subject` everything on the box's API (see PolicyIndex.unconditional). */
  async unconditional(subject: Subject): Promise<boolean> {
    return (await this.current()).unconditional(subject);
  }

  /** Whether a client's policies allow a token exchange (api/oauth/grants/token-exchange.ts). */
  async decideExchange(clientId: string, request: ExchangeRequest): Promise<Verdict> {
    const index = await this.current();
    return inTurn(() => index.decideExchange(clientId, request), this.line);
  }

  /** Whether a client's policies allow a Transaction Token request (PolicyIndex.decideTxnToken). */
  async decideTxnToken(clientId: string, request: ExchangeRequest): Promise<Verdict> {
    const index = await this.current();
    return inTurn(() => index.decideTxnToken(clientId, request), this.line);
  }

  /** Whether the box admits a client that named itself (PolicyIndex.decideRegistration; api/oauth/agents.ts). */
  async decideRegistration(request: RegistrationRequest): Promise<Verdict> {
    const index = await this.current();
    return inTurn(() => index.decideRegistration(request), this.line);
  }

  /** Whether a receiver may have a person's events (PolicyIndex.decideSsf; api/ssf/). */
  async decideSsf(request: SsfRequest): Promise<Verdict> {
    const index = await this.current();
    return inTurn(() => index.decideSsf(request), this.line);
  }

  /** Whether a SAML app's policies admit a person (PolicyIndex.decideSamlSignIn; api/saml/idp.ts). */
  async decideSamlSignIn(clientId: string, request: BoxApiRequest): Promise<Verdict> {
    const index = await this.current();
    return inTurn(() => index.decideSamlSignIn(clientId, request), this.line);
  }

  /** Whether the app's policies allow `request` (api/decision/engine.ts). */
  async decideApp(app: PoliciedApp, subject: AppSubject, question: AppQuestion): Promise<AppDecided> {
    const index = await this.current();
    return inTurn(() => index.decideApp(app, subject, question), this.line);
  }

  /** The scopes an app's policies want (PolicyIndex.scopesOf). */
  async scopesOf(app: string): Promise<string[]> {
    return (await this.current()).scopesOf(app);
  }

  /** Why a policy did not allow a request: for explanations, never on the hot path. */
  async why(id: string, request: PolicyObject): Promise<string | undefined> {
    const index = await this.current();
    return inTurn(() => index.why(id, request), this.line);
  }
}
