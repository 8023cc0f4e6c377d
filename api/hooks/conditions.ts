// A Hook's matchConditions (crds/hook.yaml): CEL over `request`, what the call carries, as an
// admission webhook's are over its AdmissionRequest. Compiled once per record written (kept beside
// the record's conditions while the directory holds it, never per call) and evaluated with the
// policies' meter (api/policy/cel: every expression is metered, api/policy/budget.ts): a hook's
// conditions cannot hold the event loop longer than a policy's can.
import type { FieldErrors } from '../errors.js';
import { CEL_PERSON, CelCompileError, compileCel, type CelObjectShape, type CompiledCel } from '../policy/cel/index.js';
import type { Hook } from '../types.js';
import type { HookRequest, Moment } from './moments.js';

const strings = { list: 'string' } as const;

/** `request` as a condition sees it: the moment, the client, the person, the grant; never a password. */
export const CONDITIONS_SHAPE: CelObjectShape = {
  fields: {
    request: {
      fields: {
        moment: 'string',
        client: { fields: { id: 'string' } },
        user: CEL_PERSON,
        grant: { fields: { type: 'string', scope: strings, aud: strings, amr: strings, acr: 'string' } },
        signIn: { fields: { way: 'string', amr: strings } },
        person: { fields: { email: 'string', via: 'string', data: { map: 'dyn' }, groups: strings } },
      },
    },
  },
};

type Conditions = NonNullable<Hook['matchConditions']>;

const compiledByRecord = new WeakMap<Conditions, { name: string; program?: CompiledCel; problem?: string }[]>();

const problemsOf = (err: unknown): string[] =>
  err instanceof CelCompileError ? err.problems : [err instanceof Error ? err.message : String(err)];

/** Why each condition cannot be, by field (`matchConditions.<name>`): what the REST API and the operator refuse. */
export function conditionProblems(hook: Pick<Hook, 'matchConditions'>): FieldErrors {
  const errors: FieldErrors = {};
  for (const { name, expression } of hook.matchConditions ?? []) {
    try {
      compileCel(expression, CONDITIONS_SHAPE);
    } catch (err) {
      errors[`matchConditions.${name}`] = problemsOf(err);
    }
  }
  return errors;
}

function compiledOf(conditions: Conditions): { name: string; program?: CompiledCel; problem?: string }[] {
  let compiled = compiledByRecord.get(conditions);
  if (!compiled) {
    compiled = conditions.map(({ name, expression }) => {
      try {
        return { name, program: compileCel(expression, CONDITIONS_SHAPE) };
      } catch (err) {
        return { name, problem: problemsOf(err).join('; ') };
      }
    });
    compiledByRecord.set(conditions, compiled);
  }
  return compiled;
}

/**
 * Whether `hook` is to be called for this request: every condition true. An error (a field the
 * request lacks, the cost budget spent) is the admission webhooks' rule: the call counts as failed,
 * and the Hook's failurePolicy decides (`{ error }`).
 */
export function matches(hook: Pick<Hook, 'matchConditions'>, moment: Moment, request: HookRequest): { match: boolean } | { error: string } {
  if (!hook.matchConditions?.length) return { match: true };
  const { password: _never, ...seen } = request;
  const bindings = { request: { moment, ...seen } };
  for (const { name, program, problem } of compiledOf(hook.matchConditions)) {
    if (!program) return { error: `matchConditions "${name}" does not compile: ${problem}` };
    const result = program.evaluate(bindings);
    if (result.kind === 'error') return { error: `matchConditions "${name}": ${result.message}` };
    if (result.value !== true) return { match: false };
  }
  return { match: true };
}
