// What a Transaction Token request (draft-ietf-oauth-transaction-tokens-10 §11.1) asks, read from
// its parameters, and what the Txn-Token it gets asserts: pure, so each rule reads in one place.
// The grant that issues it is ./grants/token-exchange.ts; the token itself, api/credentials/txn-tokens.ts.
import { invalidRequest, OAuthError } from '../credentials/errors.js';
import type { TxnClaims } from '../credentials/txn-tokens.js';
import type { Params } from './params.js';

/** The most a request_context or request_details object may hold once serialized (characters): a Txn-Token travels in a header. */
export const MAX_TXN_CONTEXT = 2048;
/** How deep its values may nest: context is a record of a request, not a document. */
const MAX_DEPTH = 4;

/**
 * `request_context` or `request_details` (§11.1: "This parameter contains a JSON object"), as an
 * object; {} when absent. Anything else is invalid_request, naming the parameter.
 */
export function contextParam(params: Params, name: 'request_context' | 'request_details'): Record<string, unknown> {
  const raw = params[name];
  if (raw === undefined || raw === '') return {};
  if (raw.length > MAX_TXN_CONTEXT) throw invalidRequest(`${name} is longer than ${MAX_TXN_CONTEXT} characters`);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw invalidRequest(`${name} must be a JSON object (draft-ietf-oauth-transaction-tokens §11.1)`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidRequest(`${name} must be a JSON object (draft-ietf-oauth-transaction-tokens §11.1)`);
  }
  if (depthOf(value) > MAX_DEPTH) throw invalidRequest(`${name} nests deeper than ${MAX_DEPTH} levels`);
  return value as Record<string, unknown>;
}

function depthOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  return 1 + Math.max(0, ...Object.values(value).map(depthOf));
}

/**
 * A replacement's context: the replaced Txn-Token's, with what the request adds. §13.15: a TTS
 * "MAY enable additional asserted values" and "MUST NOT enable modification to asserted values
 * that expand the scope of permitted actions": a key already asserted keeps its value, and asking
 * for another value of it is refused, never silently dropped (the requester would believe it).
 */
export function extendedContext(
  claim: 'tctx' | 'rctx',
  asserted: Record<string, unknown> | undefined,
  added: Record<string, unknown>,
): Record<string, unknown> {
  const kept = asserted ?? {};
  for (const [key, value] of Object.entries(added)) {
    if (Object.hasOwn(kept, key) && JSON.stringify(kept[key]) !== JSON.stringify(value)) {
      throw invalidRequest(
        `a replacement Txn-Token may add to ${claim}, not change it: ${claim}.${key} is already asserted (draft-ietf-oauth-transaction-tokens §13.15)`,
      );
    }
  }
  return { ...kept, ...added };
}

/**
 * The scope of a replacement: within the replaced Txn-Token's (§13.15: "MAY enable modifications to
 * asserted values that reduce the scope of permitted actions"); the replaced one's when none is asked.
 */
export function narrowedScope(replaced: string, requested: string[] | null): string {
  if (!requested) return replaced;
  const had = replaced.split(' ');
  const wider = requested.filter((s) => !had.includes(s));
  if (wider.length) {
    throw new OAuthError(
      'invalid_scope',
      `a replacement Txn-Token may narrow the scope, not widen it: ${wider.map((s) => `"${s}"`).join(', ')} is not in the replaced Txn-Token's scope`,
    );
  }
  return requested.join(' ');
}

/** The requesting workloads a replacement names: the replaced one's, then this client (§13.15: "MUST maintain the Call Chain of workloads that requested the Txn-Token being replaced"). */
export function requestingWorkloads(replaced: Pick<TxnClaims, 'req_wl'> | undefined, client: string): string {
  if (!replaced) return client;
  const chain = replaced.req_wl.split(',');
  return chain[chain.length - 1] === client ? replaced.req_wl : `${replaced.req_wl},${client}`;
}
