// The policies of a box in memory, indexed by the subjects they link to, and the
// one question the API asks of them: may this token make this request?
// Policies OR together; with none that applies, the answer is no.
//
// A token speaks for its client alone (client_credentials, workload identity), or
// for a person through a client (a browser or device sign-in, and its refreshes).
// The second kind acts within what BOTH were granted (RFC 9700 §2.3, privilege
// restriction; ARCHITECTURE §7): the person's side (policies linked to the user,
// to one of their groups, or global) and the client's side (policies linked to
// that client, never global ones — a global policy that tests the user's groups
// must not let every app those people sign in to act as them). Signing in to an
// app therefore never hands the app the person's rights on the box's own API.
import type { Pool } from '../db/pool.js';
import type { ChangeFeed } from '../db/notify.js';
import { accessPolicies } from '../store/policies.js';
import type { AccessPolicy } from '../types.js';
import { compilePolicy, createPolicyAjv, type PolicyRequest, type Rule } from './engines.js';

/** Whom a token speaks for. */
export interface Subject {
  clientId: string;
  /** The person, when a person's sign-in issued the token to the client (a delegated token). */
  user: { id: string; groups: { id: string; name: string }[] } | null;
}

/**
 * The answer: which policies allowed it, or which side no policy allowed
 * (`client`: a delegated token's client may not act for its users this way).
 */
export type Verdict = { allowed: true; policies: string[] } | { allowed: false; refusedBy: 'person' | 'client' };

interface CompiledPolicy {
  id: string;
  rule: Rule;
}

class PolicyIndex {
  readonly global: CompiledPolicy[] = [];
  readonly linked = new Map<string, CompiledPolicy[]>();

  constructor(policies: AccessPolicy[], onError: (id: string, err: Error) => void) {
    const ajv = createPolicyAjv();
    for (const policy of policies) {
      let compiled: CompiledPolicy;
      try {
        compiled = { id: policy.id, rule: compilePolicy(policy, ajv) };
      } catch (err) {
        onError(policy.id, err as Error); // a broken policy allows nothing
        continue;
      }
      if (!policy.link?.length) this.global.push(compiled);
      for (const link of policy.link ?? []) {
        const key = `${link.resourceType}/${link.id}`;
        this.linked.set(key, [...(this.linked.get(key) ?? []), compiled]);
      }
    }
  }

  /** Policies linked to any of `keys` (`<resourceType>/<id>`), and the global ones when asked. */
  private linkedTo(keys: string[], withGlobal: boolean): CompiledPolicy[] {
    return [...new Set([...(withGlobal ? this.global : []), ...keys.flatMap((k) => this.linked.get(k) ?? [])])];
  }

  /** The policy allowing `request` among those of one side, if any. */
  private firstAllowing(keys: string[], withGlobal: boolean, request: PolicyRequest): string | undefined {
    return this.linkedTo(keys, withGlobal).find((p) => p.rule(request))?.id;
  }

  decide(subject: Subject, request: PolicyRequest): Verdict {
    const client = [`Client/${subject.clientId}`];
    if (!subject.user) {
      const id = this.firstAllowing(client, true, request);
      return id !== undefined ? { allowed: true, policies: [id] } : { allowed: false, refusedBy: 'client' };
    }
    const person = [`User/${subject.user.id}`, ...subject.user.groups.flatMap((g) => [`Group/${g.id}`, `Group/${g.name}`])];
    const forPerson = this.firstAllowing(person, true, request);
    if (forPerson === undefined) return { allowed: false, refusedBy: 'person' };
    const forClient = this.firstAllowing(client, false, request);
    if (forClient === undefined) return { allowed: false, refusedBy: 'client' };
    return { allowed: true, policies: [forPerson, forClient] };
  }
}

export class Policies {
  private index: Promise<PolicyIndex> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly feed: ChangeFeed,
    private readonly onError: (id: string, err: Error) => void,
  ) {
    feed.onChange('access_policies', () => this.forget());
    feed.onReset(() => this.forget());
  }

  /** Drops the loaded set; the next question reads the policies afresh. */
  forget(): void {
    this.index = undefined;
  }

  private load(): Promise<PolicyIndex> {
    const loading = accessPolicies.all(this.pool).then((all) => new PolicyIndex(all, this.onError));
    loading.catch(() => {
      if (this.index === loading) this.index = undefined;
    });
    return loading;
  }

  private current(): Promise<PolicyIndex> {
    // Without the feed, changes cannot be heard of: read afresh every time.
    if (!this.feed.connected) return this.load();
    return (this.index ??= this.load());
  }

  /** Whether `subject` may make `request`, and by which policies (see the top of this file). */
  async decide(subject: Subject, request: PolicyRequest): Promise<Verdict> {
    return (await this.current()).decide(subject, request);
  }
}
