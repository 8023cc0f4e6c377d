// Why a decision came out as it did: each policy of the app that applied, what it
// said, and — for those that did not allow — the failing matcho path or JSON
// Schema error (api/policy/engines.ts `why`). For `boxauth explain`: a replayed
// request, or a refused decision the record kept (./record.ts). Never on the hot path.
import type { Policies } from '../policy/evaluate.js';
import type { DecisionRow } from '../store/decisions.js';
import type { AppRequest, AuthzenRequest, PolicyObject } from '../policy/requests.js';
import type { Decision } from './engine.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  policies: Policies;
}

export interface PolicyExplanation {
  id: string;
  verdict: string;
  /** Why it did not allow (its failing path or schema error), or why it cannot say. */
  why?: string;
}

export interface Explanation {
  id: string;
  app: string | null;
  allowed: boolean;
  status: number;
  reason: string;
  policies: PolicyExplanation[];
  request: object | null;
  /** For a recorded decision: when it was made. */
  at?: string;
  /** For a recorded decision kept as an excerpt: what it cut (its policies were not evaluated again). */
  cut?: string[];
}

/** Why a policy of a decision kept as an excerpt is shown as it was, not evaluated again. */
export const NOT_REPLAYED =
  'not evaluated again: the record keeps an excerpt of the request (see cut), and a policy could say otherwise of the excerpt than of the request; the verdict is the one given at the time';

/** A kept refusal's request: the app's request object the decision was made on (./record.ts keeps it whole when nothing is cut). */
const keptRequest = (row: DecisionRow): AppRequest | AuthzenRequest | null => row.request as AppRequest | AuthzenRequest | null;

/**
 * Each outcome of an app's decision, with why a policy that did not allow it did not: `boxauth
 * explain`'s, and `boxauth policy test`'s for a case that failed (its policies in a PolicyIndex).
 */
export async function explainPolicies(
  svc: { policies: { why(id: string, request: PolicyObject): Promise<string | undefined> | string | undefined } },
  outcomes: { id: string; verdict: string; acr?: string; scope?: string[]; stopped?: string }[],
  request: AppRequest | AuthzenRequest | null,
): Promise<PolicyExplanation[]> {
  const out: PolicyExplanation[] = [];
  for (const o of outcomes) {
    if (o.verdict !== 'does not allow' && o.verdict !== 'would not allow') {
      // Its rule allows: what is wanted, if anything, is a stronger sign-in (AccessPolicy.acr) or more scope (AccessPolicy.scope).
      const wanted = [
        ...(o.acr ? [`after a sign-in of class ${o.acr} (the caller's is weaker)`] : []),
        ...(o.scope ? [`with a token of scope "${o.scope.join(' ')}" (the caller's lacks some)`] : []),
      ];
      out.push(wanted.length ? { ...o, why: `its rule allows the request, ${wanted.join(' and ')}` } : o);
      continue;
    }
    // Stopped by its budget: why is that, not what evaluating it again within another budget would say.
    if (o.stopped) {
      out.push({ ...o, why: o.stopped });
      continue;
    }
    if (request === null) {
      out.push(o);
      continue;
    }
    const why = await svc.policies.why(o.id, request);
    out.push({ ...o, why: why ?? 'it allows the request now (the policy changed since, or was removed)' });
  }
  return out;
}

/** A decision just made (a replay), explained. */
export async function explainDecision(svc: Pick<Needs, 'policies'>, d: Decision): Promise<Explanation> {
  return {
    id: d.id,
    app: d.app,
    allowed: d.allowed,
    status: d.status,
    reason: d.description,
    policies: await explainPolicies(svc, d.outcomes, d.request),
    request: d.request,
  };
}

/**
 * A refused decision the record kept, explained against the policies as they are now;
 * when the record keeps only an excerpt of the request, with the verdicts given at the
 * time instead, marked: evaluating an excerpt would explain another request.
 */
export async function explainRecorded(svc: Pick<Needs, 'policies'>, row: DecisionRow): Promise<Explanation> {
  const { cut } = row;
  return {
    id: row.id,
    app: row.app,
    allowed: false,
    status: row.status,
    reason: row.reason,
    policies: cut.length
      ? row.policies.map((o) => ({ ...o, why: NOT_REPLAYED }))
      : await explainPolicies(svc, row.policies, keptRequest(row)),
    request: row.request,
    at: new Date(row.at).toISOString(),
    ...(cut.length ? { cut } : {}),
  };
}
