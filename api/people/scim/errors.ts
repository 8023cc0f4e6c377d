// RFC 7644 §3.12: a SCIM error is an HTTP status, a scimType for 400s (and 409, 413), and a detail.
// Every refusal of the SCIM door is one of these; the door writes it as the RFC's body.

/** RFC 7644 Table 9's scimType values this server uses. */
export type ScimType =
  'invalidFilter' | 'tooMany' | 'uniqueness' | 'mutability' | 'invalidSyntax' | 'invalidPath' | 'noTarget' | 'invalidValue' | 'invalidVers';

export class ScimError extends Error {
  constructor(
    readonly status: number,
    readonly scimType: ScimType | undefined,
    detail: string,
  ) {
    super(detail);
  }
}

export const invalidValue = (detail: string): ScimError => new ScimError(400, 'invalidValue', detail);
export const invalidPath = (detail: string): ScimError => new ScimError(400, 'invalidPath', detail);
export const mutability = (detail: string): ScimError => new ScimError(400, 'mutability', detail);
export const invalidFilter = (detail: string): ScimError => new ScimError(400, 'invalidFilter', detail);
export const noTarget = (detail: string): ScimError => new ScimError(400, 'noTarget', detail);
export const notFound = (what: string): ScimError => new ScimError(404, undefined, `${what} not found`);
