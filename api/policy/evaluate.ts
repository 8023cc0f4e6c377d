// The policies of a box in memory, indexed by the subjects they link to, and the
// one question the API asks of them: does any policy allow this request?
// Policies OR together; with none that applies, the answer is no.
import type { Pool } from '../db/pool.js';
import type { ChangeFeed } from '../db/notify.js';
import { accessPolicies } from '../store/policies.js';
import type { AccessPolicy } from '../types.js';
import { compilePolicy, createPolicyAjv, type PolicyRequest, type Rule } from './engines.js';

export interface Subject {
  clientId: string | null;
  userId: string | null;
  /** A Group link may name a group by id or by name. */
  groups: { id: string; name: string }[];
}

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

  candidates(subject: Subject): CompiledPolicy[] {
    const keys = [
      subject.clientId !== null ? `Client/${subject.clientId}` : '',
      subject.userId !== null ? `User/${subject.userId}` : '',
      ...subject.groups.flatMap((g) => [`Group/${g.id}`, `Group/${g.name}`]),
    ];
    return [...new Set([...this.global, ...keys.flatMap((k) => this.linked.get(k) ?? [])])];
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

  /** The id of the first policy allowing the request, or undefined (denied). */
  async allows(subject: Subject, request: PolicyRequest): Promise<string | undefined> {
    const index = await this.current();
    return index.candidates(subject).find((p) => p.rule(request))?.id;
  }
}
