// Validation of /users and /groups bodies. Every problem is reported at once as
// 422 {entity, errors}. The entity echoes the submitted fields, except a
// password: it never travels back, not even in an error (api/http/errors.ts
// hides every write-only field of a 422's entity).
import { type FieldErrors, noFieldErrors, ValidationError } from '../errors.js';
import { invisibleProblem } from '../input.js';
import type { PasswordCheck } from './password-policy.js';
import { mixedScriptProblem } from './scripts.js';

export const EMAIL_MAX = 254;
export const DATA_MAX = 64 * 1024;
export const NAME_MAX = 200;
export const DESCRIPTION_MAX = 2000;
// A practical check: one @, something on each side, no spaces (domains like `localhost` are fine).
const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** Whether a sign-in name is an email address (a name SCIM gave the person may not be: they then have no address). */
export const isEmailAddress = (value: string): boolean => EMAIL.test(value);

/**
 * What keeps `value` from being a person's email address, the check every address that enters
 * goes through (typed, sent to /users, given by an upstream provider): at most EMAIL_MAX
 * characters, no control or invisible character (a CR LF would start a mail header), one "@"
 * with something on each side and no space (two addresses are not one), and no part that mixes
 * scripts (./scripts.ts: `аdmin@…` with a Cyrillic а is not the admin). Undefined: it is one.
 */
export function emailProblem(value: string): string | undefined {
  if (value.length > EMAIL_MAX) return `must be at most ${EMAIL_MAX} characters`;
  const invisible = invisibleProblem(value);
  if (invisible) return invisible;
  if (!EMAIL.test(value.trim())) return 'is not a valid email address';
  return mixedScriptProblem(value.trim());
}

export interface UserInput {
  email?: string;
  password?: string;
  data?: string | null;
  groupIds?: number[];
  /** Set only when the request names it: the box vouches for an address only when told to. */
  emailVerified?: boolean;
  /** False turns the person off (as SCIM's active=false): what they obtained ends, no sign-in until true again. */
  active?: boolean;
}

export interface GroupInput {
  name?: string;
  description?: string | null;
  requireSecondFactor?: boolean;
}

function asObject(body: unknown, what: string): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationError(body ?? null, { [what]: [`a ${what} object is required`] });
  }
  return body as Record<string, unknown>;
}

function add(errors: FieldErrors, field: string, message: string): void {
  (errors[field] ??= []).push(message);
}

function unknownFields(body: Record<string, unknown>, known: string[], errors: FieldErrors): void {
  for (const field of Object.keys(body)) if (!known.includes(field)) add(errors, field, 'is not a known field');
}

const USER_FIELDS = [
  'email',
  'email_verified',
  'must_verify_email',
  'active',
  'password',
  'data',
  'group-ids',
  'id',
  'status',
  'groups',
  'created_at',
  'updated_at',
  // Shown, never written here: what a directory wrote of the person is written through SCIM alone.
  'scim',
];

/** How a new password in a user body is checked: the box's rule (schema/password-policy.ts), against an address. */
export interface NewPassword {
  check?: PasswordCheck;
  /** The person's address as it is, which the password must not be like when the body names no new one. */
  email?: string | undefined;
}

/**
 * The user fields of a POST (`creating`) or PUT body. A body that may carry a password is read
 * with the box's password rule (`newPassword.check`); one read without it must carry none.
 */
export function userInput(raw: unknown, creating: boolean, urlId?: number, newPassword: NewPassword = {}): UserInput {
  const body = asObject(raw, 'user');
  const errors = noFieldErrors();
  unknownFields(body, USER_FIELDS, errors);
  const input: UserInput = {};

  if (body.email === undefined) {
    if (creating) add(errors, 'email', 'is required');
  } else if (typeof body.email !== 'string' || !body.email.trim()) add(errors, 'email', 'is required');
  else if (emailProblem(body.email)) add(errors, 'email', emailProblem(body.email)!);
  else input.email = body.email.trim();

  if (body.email_verified !== undefined) {
    if (typeof body.email_verified !== 'boolean') add(errors, 'email_verified', 'must be true or false');
    else input.emailVerified = body.email_verified;
  }

  if (body.password === undefined) {
    if (creating) add(errors, 'password', 'is required');
  } else if (typeof body.password !== 'string') add(errors, 'password', 'must be a string');
  else if (!newPassword.check) throw new Error("a password in a user body is checked against the box's rule: give newPassword.check");
  else {
    const problem = newPassword.check(body.password, input.email ?? newPassword.email);
    if (problem) add(errors, 'password', problem);
    else input.password = body.password;
  }

  if (body.data !== undefined) {
    if (body.data === null) input.data = null;
    else if (typeof body.data !== 'string') add(errors, 'data', 'must be a string holding JSON, or null');
    else if (body.data.length > DATA_MAX) add(errors, 'data', `must be at most ${DATA_MAX} characters`);
    else {
      try {
        JSON.parse(body.data);
        input.data = body.data;
      } catch {
        add(errors, 'data', 'must be valid JSON');
      }
    }
  }

  const groupIds = body['group-ids'];
  if (groupIds !== undefined && groupIds !== null) {
    const ids = Array.isArray(groupIds) ? groupIds.map((g) => (typeof g === 'string' && /^\d+$/.test(g) ? Number(g) : g)) : undefined;
    if (!ids || !ids.every((g) => Number.isSafeInteger(g) && (g as number) > 0)) add(errors, 'group-ids', 'must be an array of group ids');
    else input.groupIds = [...new Set(ids as number[])];
  }

  if (body.id !== undefined && (urlId === undefined || Number(body.id) !== urlId)) {
    add(errors, 'id', urlId === undefined ? 'is assigned by the service' : `must equal the id in the URL (${urlId})`);
  }
  if (body.status !== undefined && body.status !== null) add(errors, 'status', 'must be null');
  if (body.active !== undefined) {
    if (typeof body.active !== 'boolean') add(errors, 'active', 'must be true or false');
    else input.active = body.active;
  }
  // Read back as it is shown; the box sets it (sign-up), and vouching (email_verified: true) clears it.
  if (body.must_verify_email !== undefined && typeof body.must_verify_email !== 'boolean')
    add(errors, 'must_verify_email', 'must be true or false (it is cleared by email_verified: true)');

  if (Object.keys(errors).length) throw new ValidationError(body, errors);
  return input;
}

export function groupInput(raw: unknown, creating: boolean): GroupInput {
  const body = asObject(raw, 'group');
  const errors = noFieldErrors();
  unknownFields(body, ['name', 'description', 'require_second_factor', 'id', 'created_at'], errors);
  const input: GroupInput = {};
  if (body.name === undefined) {
    if (creating) add(errors, 'name', 'is required');
  } else if (typeof body.name !== 'string' || !body.name.trim()) add(errors, 'name', 'is required');
  else if (body.name.length > NAME_MAX) add(errors, 'name', `must be at most ${NAME_MAX} characters`);
  else if (invisibleProblem(body.name)) add(errors, 'name', invisibleProblem(body.name)!);
  else input.name = body.name.trim();
  if (body.description !== undefined) {
    if (body.description !== null && typeof body.description !== 'string') add(errors, 'description', 'must be a string or null');
    else if (typeof body.description === 'string' && body.description.length > DESCRIPTION_MAX) {
      add(errors, 'description', `must be at most ${DESCRIPTION_MAX} characters`);
    } else input.description = body.description;
  }
  if (body.require_second_factor !== undefined) {
    if (typeof body.require_second_factor !== 'boolean') add(errors, 'require_second_factor', 'must be true or false');
    else input.requireSecondFactor = body.require_second_factor;
  }
  if (Object.keys(errors).length) throw new ValidationError(body, errors);
  return input;
}

/** A 422 for a problem found after the shape checks (a taken email, an unknown group). */
export function rejected(raw: unknown, field: string, message: string): ValidationError {
  return ValidationError.field(raw, field, message);
}
