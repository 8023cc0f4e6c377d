// How long a policy may hold the event loop. Policies are written by people the box trusts with
// one App (docs/concepts/access-control.md, "Delegating records") and run on what any client sends,
// in the one thread that serves every other request: an evaluation without a bound is a way for one
// team to stall the whole box (issue 63: three `matches` of a 3,000-instruction pattern over a
// 4,000-character path held the loop for seconds, and every other client's token waited).
//
// So every evaluation is metered in cost units — cel-go's for CEL (one an iteration, one a call
// and a tenth of what it makes: ./cel/compile.ts), and for a regular expression RE2's work bound,
// the size of its compiled program times the length of the input, charged before it runs
// (./regex.ts) — and three limits stop it:
// - a policy: EVALUATION_LIMITS.perPolicy (Kubernetes' PerCallLimit);
// - a decision, every policy asked about one request object, run in one go: perDecision;
// - a request, every decision it makes (an AuthZEN batch or search): perRequest (Kubernetes' RuntimeCELCostBudget).
// An evaluation stopped by one is an error, and an error denies. And decisions take turns
// (inTurn): once the policies of the current turn of the event loop (from one check phase to the
// next) have spent perDecision, the next decision waits for the loop's next turn, so what is
// waiting (another client's request) runs in between. A turn's policies spend at most
// EVALUATION_LIMITS.perTurn: the bound docs/security.md states, and test/integration/policy-regex.test.ts
// measures as another client's latency.
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';

/**
 * The limits, in cost units. A unit is about 0.3 µs of one core (a CEL iteration, three steps of
 * RE2's program over one character: measured on re2js and @bufbuild/cel, test/unit/policy/budget.test.ts):
 * a decision's 100,000 about 30 ms, a turn's 200,000 about 60 ms.
 */
export const EVALUATION_LIMITS = {
  /** What one policy's evaluation may spend (Kubernetes' PerCallLimit; within a decision, perDecision stops it first). */
  perPolicy: 1_000_000,
  /** What one decision (every policy asked about one request object) may spend. */
  perDecision: 100_000,
  /** The most policies spend between two turns of the event loop: a turn's decisions (perDecision) and the one that ends it. */
  perTurn: 200_000,
  /** What one request may spend over all its decisions (an AuthZEN batch or search). */
  perRequest: 10_000_000,
  /** The largest program a pattern may compile to, in RE2 instructions (RE2's own bound is its max_mem). */
  program: 1_000,
  /** Steps of RE2's program (an instruction over one character) a unit pays for. */
  regexStepsPerUnit: 3,
  /** What compiling a request's pattern costs an instruction (re2js takes some 15 µs an instruction). */
  compileUnitsPerInstruction: 50,
} as const;

/** What a match of a program of `size` instructions over `length` characters may cost (RE2's bound: each character steps through the whole program at most). */
export const matchCost = (size: number, length: number): number => Math.ceil((size * (length + 1)) / EVALUATION_LIMITS.regexStepsPerUnit);

/** Thrown by `charge` past the meter's limit: the evaluation stops (an error of the policy, which denies). */
export class OverBudget extends Error {
  constructor() {
    super('over its cost budget');
    this.name = 'OverBudget';
  }
}

/** The meter of the evaluation running now. Evaluations are synchronous: one meter serves them all. */
const meter = { spent: 0, limit: Infinity };

/** Spends `units` of the running evaluation; past its limit, throws OverBudget (and spends nothing more). */
export function charge(units: number): void {
  meter.spent += units;
  if (meter.spent > meter.limit) throw new OverBudget();
}

/** Units spent so far by the running evaluation. */
export const spentNow = (): number => meter.spent;

/**
 * What is left of one request's budget for every evaluation it makes, as Kubernetes has one per
 * request beside its per-call limit (apiextensions' RuntimeCELCostBudget): a request that decides
 * many times (an AuthZEN search, up to a thousand candidates each through every policy of the
 * App) would otherwise cost a thousand times the per-call limit.
 */
const requestBudget = new AsyncLocalStorage<{ left: number }>();

/**
 * Runs `fn` with a budget of `limit` for every evaluation it makes, awaited ones included; within
 * a request that has one already (each evaluation of an AuthZEN search is a decision), that one.
 */
export const withBudget = <T>(fn: () => T, limit: number = EVALUATION_LIMITS.perRequest): T =>
  requestBudget.getStore() ? fn() : requestBudget.run({ left: limit }, fn);

/** Whether the budget of the request being served (if it has one) is spent. */
export const budgetSpent = (): boolean => (requestBudget.getStore()?.left ?? 1) <= 0;

/** What is left of the decision being made (none is being made: no limit, as for a claim). */
let decisionLeft = Infinity;

/** Runs `fn`, one decision, with perDecision for all the policies it evaluates. */
export function withDecision<T>(fn: () => T): T {
  const outer = decisionLeft;
  decisionLeft = EVALUATION_LIMITS.perDecision;
  try {
    return fn();
  } finally {
    decisionLeft = outer;
  }
}

/** Which limit stopped an evaluation. */
export type Stop = 'policy' | 'decision' | 'request';

const stopListeners: ((stop: Stop) => void)[] = [];

/** Calls `listener` at every evaluation stopped (the metric boxauth_policy_evaluations_stopped_total). */
export function onStop(listener: (stop: Stop) => void): void {
  stopListeners.push(listener);
}

/** Why an evaluation stopped by `stop` denies, as the decision's record says it. */
export function stopMessage(stop: Stop, perCall: number): string {
  switch (stop) {
    case 'policy':
      return `the evaluation was stopped: over the cost limit of ${perCall.toLocaleString('en')}`;
    case 'decision':
      return `the evaluation was stopped: the decision exceeded its budget of ${EVALUATION_LIMITS.perDecision.toLocaleString('en')} (the most the policies asked about one request may spend at once)`;
    case 'request':
      return `the evaluation was stopped: the request spent its cost budget of ${EVALUATION_LIMITS.perRequest.toLocaleString('en')}`;
  }
}

/** The limit that stopped the last evaluation metered (none: it ran within them). */
let lastStop: Stop | undefined;

/** Why the policy just evaluated (Rule.test) was stopped, in the words of its record; undefined when it was not. */
export const stoppedNow = (): string | undefined => lastStop && stopMessage(lastStop, EVALUATION_LIMITS.perPolicy);

/** Units the policies of this turn of the event loop spent (inTurn). */
const turn = { spent: 0, ending: false };

export interface Metered<T> {
  /** The evaluation's value; undefined when it was stopped before it had one. */
  value: T | undefined;
  /** The limit that stopped it; undefined when it ran within all of them. */
  stopped: Stop | undefined;
}

/**
 * Runs one policy's evaluation under the meter: at most `perCall`, and no more than is left of the
 * decision and of the request. Spent, it is drawn from the decision, the request and the turn;
 * `drawn` says what the request pays of what it spent (an unmetered CEL expression its estimate,
 * which bounds a batch of them; the decision and the turn pay what it spent, its time).
 */
export function metered<T>(run: () => T, perCall: number = EVALUATION_LIMITS.perPolicy, drawn = (spent: number) => spent): Metered<T> {
  const request = requestBudget.getStore();
  const requestLeft = Math.max(0, request?.left ?? Infinity);
  const allowed = Math.min(perCall, requestLeft, Math.max(0, decisionLeft));
  const binding: Stop = allowed === perCall ? 'policy' : allowed === requestLeft ? 'request' : 'decision';
  const outer = { ...meter };
  meter.spent = 0;
  meter.limit = allowed;
  let value: T | undefined;
  let over = false;
  let spent = 0;
  try {
    value = run();
  } catch (err) {
    if (!(err instanceof OverBudget)) throw err;
    over = true;
  } finally {
    spent = meter.spent;
    Object.assign(meter, outer);
  }
  const cost = Math.min(spent, allowed + 1);
  if (request) request.left -= Math.min(drawn(spent), allowed + 1);
  decisionLeft -= cost;
  turn.spent += cost;
  if (turn.spent > 0) endTurnSoon();
  // An evaluation over the limit may still end in a value (CEL's `stopped || true`): it is stopped all the same.
  lastStop = undefined;
  if (!over && spent <= allowed) return { value, stopped: undefined };
  lastStop = binding;
  for (const listener of stopListeners) listener(binding);
  return { value: over ? undefined : value, stopped: binding };
}

/** Decisions waiting for the next turn of the event loop. */
const waiting: (() => void)[] = [];

/** The turn ends at the event loop's next check phase (setImmediate): what was waiting for I/O has run before it. */
function endTurnSoon(): void {
  if (turn.ending) return;
  turn.ending = true;
  setImmediate(nextTurn);
}

/**
 * The end of a turn: what waits runs while the turn (what ran since the last one ended: in the
 * event loop's poll phase, and here) has spent less than a decision's budget; then a new turn
 * begins. So a turn spends at most perDecision and the one decision that passes it: perTurn.
 */
function nextTurn(): void {
  turn.ending = false;
  while (waiting.length && turn.spent < EVALUATION_LIMITS.perDecision) waiting.shift()!();
  turn.spent = 0;
  if (waiting.length) endTurnSoon();
}

/**
 * Runs `decide` (one decision, synchronous) in this turn of the event loop while its policies
 * have spent less than a decision's budget, else in the next turn with room: decisions of every
 * request in order, and the event loop's other work between turns.
 */
export function inTurn<T>(decide: () => T): Promise<T> {
  if (!waiting.length && turn.spent < EVALUATION_LIMITS.perDecision) return Promise.resolve(decide());
  return new Promise<T>((resolve) => {
    // Bound: it runs under the request's budget (AsyncLocalStorage), which a bare callback of the loop would lose.
    // A decision that throws rejects the promise it resolves with, as an executor that throws does.
    waiting.push(AsyncResource.bind(() => resolve(new Promise<T>((decided) => decided(decide())))));
    endTurnSoon();
  });
}
