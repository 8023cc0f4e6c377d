// Writes that collided with a constraint, named by the field a person would fix.
export class ConstraintViolation extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** Rethrows PostgreSQL's unique_violation on `index` as "<field> is already taken". */
export function uniqueViolation(err: unknown, index: string, field: string): never {
  const e = err as { code?: string; constraint?: string };
  if (e.code === '23505' && e.constraint === index) throw new ConstraintViolation(field, `${field} is already taken`);
  throw err;
}

/** Rethrows PostgreSQL's foreign_key_violation as a problem of `field`. */
export function foreignKeyViolation(err: unknown, field: string, message: string): never {
  if ((err as { code?: string }).code === '23503') throw new ConstraintViolation(field, message);
  throw err;
}

// SQLSTATE classes of failures of the database itself, not of a row: connection exception,
// insufficient resources, operator intervention (shutdown, cancel), system error, internal error.
const SERVER_FAILURES = new Set(['08', '53', '57', '58', 'XX']);

/**
 * Whether one row of a statement may be why PostgreSQL refused it (a value it cannot store,
 * a constraint): the server answered with an error of a class a row can cause. Errors with no
 * SQLSTATE (no connection, a pool timeout) are no row's fault.
 */
export function rowMayCause(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !SERVER_FAILURES.has(code.slice(0, 2));
}
