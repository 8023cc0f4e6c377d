// The CEL engine's entry (docs/concepts/access-control.md): compile an expression once for an
// environment, evaluate it per request, explain a value.
export {
  CelCompileError,
  celValue,
  compileCel,
  convertedValues,
  explainCel as explain,
  showCel,
  type CelOutcome,
  type CelPart,
  type CompiledCel,
  type CelOptions,
} from './compile.js';
export { COST_LIMITS, SIZES } from './check.js';
export { SOURCE_LIMITS, celBudgetSpent, withCelBudget } from './compile.js';
export { celToJson, type JsonBudget } from './json.js';
export { CEL_ENVIRONMENTS, CEL_PERSON, type CelEnvironmentName, type CelObjectShape, type CelShape } from './shapes.js';
