// What every grant handler receives, and the shape it has.
import type { Services } from '../../services.js';
import type { PresentedClient } from '../client-auth.js';
import type { Params } from '../params.js';
import type { TokenResponse } from '../tokens.js';

export interface GrantContext {
  svc: Services;
  params: Params;
  presented: PresentedClient;
}

export type GrantHandler = (ctx: GrantContext) => Promise<TokenResponse>;
