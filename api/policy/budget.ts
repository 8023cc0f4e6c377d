// How long a policy may hold the event loop. Policies are written by people the box trusts with
// one App (docs/concepts/access-control.md, "Delegating records") and run on what any client sends,
// in the one thread that serves every other request: an evaluation without a bound is a way for one
// team to stall the whole box (issue 63: three `matches` of a 3,000-instruction pattern over a
// 4,000-character path held the loop for seconds, and every other client's token waited).
//
// So every evaluation is metered in cost units, counting the work it does (issue 81: counting
// patterns alone left a JSON Schema's recursion and matcho's alternatives free): each step of a
// matcho pattern (./matcho.ts), each keyword a JSON Schema applies to each value (./schema-work.ts),
// each CEL call with what it reads and makes (cel-go's costs: ./cel/compile.ts), a regular
// expression's RE2 work bound, the size of its compiled program times the length of the input,
// charged before it runs (./regex.ts), and the decision's own work (spend: the request object
// converted, each policy asked). Three limits stop it:
// - a policy: EVALUATION_LIMITS.perPolicy (Kubernetes' PerCallLimit);
// - a decision, every policy asked about one request object, run in one go: perDecision;
// - a request, every decision it makes (an AuthZEN batch or search): perRequest (Kubernetes' RuntimeCELCostBudget).
// An evaluation stopped by one is an error, and an error denies. And decisions take turns
// (inTurn): once the decisions of the current turn of the event loop (from one check phase to the
// next) have spent perDecision or run for turnMs, the next decision waits for the loop's next turn,
// so what is waiting (another client's request) runs in between. The bound docs/security.md
// states, which test/integration/policy-work.test.ts measures with adversarial policies of every
// engine as another client's latency and the event loop's delay.
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';

/**
 * The limits, in cost units. A unit is about 0.3 µs of one core (a CEL iteration, three steps of
 * RE2's program over one character, a matcho step, a schema keyword applied to a value: measured
 * on re2js and @bufbuild/cel, test/unit/policy/budget.test.ts): a decision's 100,000 about 30 ms.
 */
export const EVALUATION_LIMITS = {
  /** What one policy's evaluation may spend (Kubernetes' PerCallLimit; within a decision, perDecision stops it first). */
  perPolicy: 1_000_000,
  /** What one decision (every policy asked about one request object) may spend. */
  perDecision: 100_000,
  /**
   * The longest a turn of the event loop runs decisions before the next waits for the next turn, in
   * ms (inTurn): with the one decision that passes it, what another request may wait for I/O.
   */
  turnMs: 10,
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

/** What is left of the decision being made's budget (Infinity outside a decision). */
export const decisionLeftNow = (): number => decisionLeft;

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

/** Calls `listener` at every evaluation stopped (the metric boxauth_policy_evaluations_stopped_total), until the function it returns is called. */
export function onStop(listener: (stop: Stop) => void): () => void {
  stopListeners.push(listener);
  return () => {
    const at = stopListeners.indexOf(listener);
    if (at >= 0) stopListeners.splice(at, 1);
  };
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

/** The units the last evaluation metered spent, until takeSpent() takes them. */
let lastSpent = 0;

/** The units spent by the evaluation metered since the last call (0: none was metered, as engine `allow`): a policy's span says them. */
export function takeSpent(): number {
  const spent = lastSpent;
  lastSpent = 0;
  return spent;
}

/** The limit that stopped the last evaluation metered (none: it ran within them). */
let lastStop: Stop | undefined;

/** Why the policy just evaluated (Rule.test) was stopped, in the words of its record; undefined when it was not. */
export const stoppedNow = (): string | undefined => lastStop && stopMessage(lastStop, EVALUATION_LIMITS.perPolicy);

/**
 * The turn of the event loop under way (inTurn): when its first decision ran (0: none has yet),
 * and the units its decisions spent.
 */
const turn = { started: 0, spent: 0, ending: false };

/** Whether the turn under way may run another decision: under a decision's budget, and under EVALUATION_LIMITS.turnMs since it began. */
const turnHasRoom = (): boolean =>
  turn.started === 0 || (turn.spent < EVALUATION_LIMITS.perDecision && performance.now() - turn.started < EVALUATION_LIMITS.turnMs);

/** A decision runs in the turn under way: the first one begins it, and its end is due at the loop's next check phase. */
function beginTurn(): void {
  if (turn.started !== 0) return;
  turn.started = performance.now();
  endTurnSoon();
}

/**
 * Spends `units` of the decision being made on its own work, not a policy's: the request object
 * converted for its expressions (./engines.ts), each policy asked. Drawn from the decision, the
 * request and the turn as a policy's units are; it never throws: the decision's next policy finds
 * the budget spent, and is stopped.
 */
export function spend(units: number): void {
  const request = requestBudget.getStore();
  if (request) request.left -= units;
  decisionLeft -= units;
  turn.spent += units;
  beginTurn();
}

export interface Metered<T> {
  /** The evaluation's value; undefined when it was stopped before it had one. */
  value: T | undefined;
  /** The limit that stopped it; undefined when it ran within all of them. */
  stopped: Stop | undefined;
}

/**
 * Runs one policy's evaluation under the meter: at most `perCall`, and no more than is left of the
 * decision and of the request. What it spent, and a unit for asking it, is drawn from the decision,
 * the request and the turn.
 */
export function metered<T>(run: () => T, perCall: number = EVALUATION_LIMITS.perPolicy): Metered<T> {
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
  // One unit for asking the policy at all: twenty policies that each spend nothing still cost twenty.
  const cost = Math.min(spent, allowed + 1) + 1;
  if (request) request.left -= cost;
  decisionLeft -= cost;
  turn.spent += cost;
  beginTurn();
  lastSpent = spent;
  // An evaluation over the limit may still end in a value (CEL's `stopped || true`): it is stopped all the same.
  lastStop = undefined;
  if (!over && spent <= allowed) return { value, stopped: undefined };
  lastStop = binding;
  for (const listener of stopListeners) listener(binding);
  return { value: over ? undefined : value, stopped: binding };
}

/**
 * One box's decisions waiting for a turn of the event loop (its Policies' own). A host serves many
 * boxes in one event loop: the turns go round the boxes with decisions waiting, one decision each,
 * so that a box whose requests decide at their limit all the time holds another box's next decision
 * by one of its own, not by every one it has waiting (docs/kubernetes/hosted-boxes.md).
 */
export class DecisionLine {
  readonly waiting: (() => void)[] = [];
}

/** Callers outside a box's Policies. */
const processLine = new DecisionLine();

/** The lines with decisions waiting, in the order they are served: the one served goes last. */
const lines: DecisionLine[] = [];

/** The turn ends at the event loop's next check phase (setImmediate): what was waiting for I/O has run before it. */
function endTurnSoon(): void {
  if (turn.ending) return;
  turn.ending = true;
  setImmediate(nextTurn);
}

/**
 * The end of a turn, and the beginning of the next: what waits runs while the new turn has room
 * (turnHasRoom). What the decisions run here lead to (the next step of their requests, up to
 * their next decision) runs once this returns, in the same turn: a decision it reaches waits.
 */
function nextTurn(): void {
  turn.ending = false;
  turn.started = 0;
  turn.spent = 0;
  while (lines.length && turnHasRoom()) {
    const line = lines.shift()!;
    const next = line.waiting.shift()!;
    if (line.waiting.length) lines.push(line);
    next();
  }
  if (lines.length) endTurnSoon();
}

/**
 * Runs `decide` (one decision, synchronous) in this turn of the event loop while the turn has
 * room (turnHasRoom: its decisions spent less than a decision's budget, for less than
 * EVALUATION_LIMITS.turnMs), else in the next turn with room: decisions of every request in
 * order, and the event loop's other work between turns. So a turn runs decisions for at most
 * turnMs and the one decision that passes it, and another request waits for I/O no longer than
 * that: the bound docs/security.md states.
 */
export function inTurn<T>(decide: () => T, line: DecisionLine = processLine): Promise<T> {
  if (!lines.length && turnHasRoom()) {
    beginTurn();
    return Promise.resolve(decide());
  }
  return new Promise<T>((resolve) => {
    // Bound: it runs under the request's budget (AsyncLocalStorage), which a bare callback of the loop would lose.
    // A decision that throws rejects the promise it resolves with, as an executor that throws does.
    line.waiting.push(
      AsyncResource.bind(() => {
        beginTurn();
        resolve(new Promise<T>((decided) => decided(decide())));
      }),
    );
    if (line.waiting.length === 1) lines.push(line);
    endTurnSoon();
  });
}
