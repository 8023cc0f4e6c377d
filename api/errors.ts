// Every error the API answers with on purpose. The router's error handler turns
// them into responses in one place (api/http/errors.ts); anything else is a 500.

const TYPOGRAPHY: Record<string, string> = {
  '"': "'",
  '\\': '/',
  '§': 'section ',
  '—': '-',
  '–': '-',
  '…': '...',
  '‘': "'",
  '’': "'",
  '“': "'",
  '”': "'",
  '×': 'x',
  '→': '->',
  '≥': '>=',
  '≤': '<=',
};

/**
 * A description as RFC 6749 lets it travel (§5.2, §4.1.2.1: error_description is
 * %x20-21 / %x23-5B / %x5D-7E, printable ASCII without `"` and `\`): typography
 * becomes its ASCII spelling, anything else — a client id in another script, a
 * line break — is percent-encoded, so nothing a message quotes is lost. Every
 * error_description the box sends passes through here, by way of errorFields or
 * challenge below: no answer applies it by hand.
 */
export function describable(text: string): string {
  let out = '';
  for (const ch of text) {
    const code = ch.codePointAt(0)!;
    if (code >= 0x20 && code <= 0x7e && ch !== '"' && ch !== '\\') out += ch;
    else if (code >= 0xd800 && code <= 0xdfff)
      out += '?'; // a lone surrogate has no UTF-8 to encode
    else out += TYPOGRAPHY[ch] ?? encodeURIComponent(ch);
  }
  return out;
}

/** An error as every answer of the box carries it: a JSON body (any door's, gRPC's too), a redirect's parameters. */
export const errorFields = (error: string, description: string): { error: string; error_description: string } => ({
  error,
  error_description: describable(description),
});

/**
 * A WWW-Authenticate challenge (RFC 6750 §3, RFC 9449 §7.1) of `scheme` for `realm`: with the error
 * and its description when there is one, then `params` (such as DPoP's algs).
 */
export function challenge(
  scheme: 'Bearer' | 'DPoP',
  realm: string,
  refusal?: { error: string; description: string },
  ...params: string[]
): string {
  const error = refusal ? [`error="${refusal.error}"`, `error_description="${describable(refusal.description)}"`] : [];
  return [`${scheme} realm="${realm}"`, ...error, ...params].join(', ');
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }

  body(): unknown {
    return errorFields(this.code, this.message);
  }
}

export type FieldErrors = Record<string, string[]>;

/** An empty FieldErrors: field names may come from a body, so none may reach an object's prototype. */
export const noFieldErrors = (): FieldErrors => Object.create(null) as FieldErrors;

/** 422 {entity, errors}: the shape of every validation failure, anywhere in the API. */
export class ValidationError extends ApiError {
  constructor(
    readonly entity: unknown,
    readonly errors: FieldErrors,
  ) {
    super(
      422,
      'invalid_entity',
      Object.entries(errors)
        .map(([f, m]) => `${f}: ${m.join(', ')}`)
        .join('; '),
    );
  }

  override body(): unknown {
    return this.bodyShowing((entity) => entity);
  }

  /** The answer's body with the entity as `shown` makes it: http/errors.ts hides the write-only fields there. */
  bodyShowing(shown: (entity: unknown) => unknown): { entity: unknown; errors: FieldErrors } {
    return { entity: shown(this.entity), errors: this.errors };
  }

  static field(entity: unknown, field: string, message: string): ValidationError {
    return new ValidationError(entity, { [field]: [message] });
  }
}

export const notFound = (what: string): ApiError => new ApiError(404, 'not_found', `${what} not found`);
export const badRequest = (description: string): ApiError => new ApiError(400, 'invalid_request', description);

/**
 * The message of whatever was thrown. `catch` hands over `unknown`: a library
 * may throw a string or a plain object, and a cast to Error would read
 * `undefined` from it.
 */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
