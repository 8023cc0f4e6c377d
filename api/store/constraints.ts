// Writes that collided with a constraint, named by the field a person would fix.
export class ConstraintViolation extends Error {
  constructor(readonly field: string, message: string) {
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
