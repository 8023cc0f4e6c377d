// What every grant handler receives, and the shape it has.
import type { Services } from '../../services.js';
import type { Params, PresentedClient } from '../client-auth.js';
import type { TokenResponse } from '../tokens.js';
import { invalidRequest } from '../errors.js';

export interface GrantContext {
  svc: Services;
  params: Params;
  presented: PresentedClient;
}

export type GrantHandler = (ctx: GrantContext) => Promise<TokenResponse>;

export function required(params: Params, name: string): string {
  const value = params[name];
  if (value === undefined || value === '') throw invalidRequest(`${name} is required`);
  return value;
}
