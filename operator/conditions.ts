// status.conditions as Kubernetes API conventions want them (metav1.Condition):
// lastTransitionTime moves only when a condition's status flips, not when its
// reason or message changes (as cert-manager's and apimachinery's helpers do).
import { kubeTime } from './clock.js';
import { ConditionType } from './reasons.js';

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  observedGeneration?: number;
  lastTransitionTime: string;
}

export interface NewCondition {
  type: ConditionType;
  status: ConditionStatus;
  reason: string;
  message: string;
}

/** The conditions with `next` set at `now` (the controllers' clock); other types are kept as they are. */
export function setCondition(
  conditions: Condition[] | undefined,
  next: NewCondition,
  generation: number | undefined,
  now: Date,
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const previous = i >= 0 ? list[i] : undefined;
  const condition: Condition = {
    type: next.type,
    status: next.status,
    reason: next.reason,
    message: next.message,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    lastTransitionTime: previous && previous.status === next.status ? previous.lastTransitionTime : kubeTime(now),
  };
  if (i >= 0) list[i] = condition;
  else list.push(condition);
  return list;
}

export function findCondition(conditions: Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

export function isReady(obj: { status?: { conditions?: Condition[] } } | undefined): boolean {
  return findCondition(obj?.status?.conditions, ConditionType.Ready)?.status === 'True';
}
