// Writes that collided with a constraint, named by the field a person would fix.
export class ConstraintViolation extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/** Rethrows PostgreSQL's unique_violation on `index` (or any of several) as "<field> is already taken". */
export function uniqueViolation(err: unknown, index: string | readonly string[], field: string): never {
  const e = err as { code?: string; constraint?: string };
  const indexes: readonly string[] = typeof index === 'string' ? [index] : index;
  if (e.code === '23505' && e.constraint !== undefined && indexes.includes(e.constraint))
    throw new ConstraintViolation(field, `${field} is already taken`);
  throw err;
}

/** Rethrows PostgreSQL's foreign_key_violation as a problem of `field`. */
export function foreignKeyViolation(err: unknown, field: string, message: string): never {
  if ((err as { code?: string }).code === '23503') throw new ConstraintViolation(field, message);
  throw err;
}

// SQLSTATE classes a row's values can cause: cardinality violation (21: ON CONFLICT meeting one
// row twice), data exception (22: a value the column cannot store), integrity constraint violation
// (23), program limit exceeded (54: a value too big for an index), transaction rollback (40: a
// deadlock over the rows touched). Any other failure is the statement's or the server's (a lost
// connection, a shutdown, a missing column after a bad deploy): every row alone would fail too.
const ROW_CLASSES = new Set(['21', '22', '23', '40', '54']);

/**
 * Whether one row of a statement may be why PostgreSQL refused it, so that committing the rows
 * one by one is worth it. Errors with no SQLSTATE (no connection, a pool timeout) are no row's fault.
 */
export function rowMayCause(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && ROW_CLASSES.has(code.slice(0, 2));
}
