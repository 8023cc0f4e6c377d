// What a refused request is told, whichever door it came through (api/http/gate-endpoints.ts
// writes it as an HTTP response, api/grpc/check.ts as Envoy's denied_response): a JSON-RPC
// error for a JSON-RPC request (an MCP client's), a page for a person's browser, else RFC
// 6749-style JSON, each naming the decision.
import { errorFields } from '../errors.js';
import { PLAIN_LOOK } from '../ui/frame.js';
import { words } from '../ui/language.js';
import { messagePage } from '../ui/pages.js';
import type { Decision, RpcAnswer } from '../decision/engine.js';

export interface Refusal {
  status: number;
  /** 'html': `body` is a page (send it with the pages' headers); 'json': an error object. */
  kind: 'html' | 'json';
  body: string;
}

const ERRORS: Record<number, string> = {
  400: 'invalid_request',
  401: 'invalid_token',
  403: 'access_denied',
  413: 'invalid_request',
};

/**
 * A JSON-RPC request's refusal as its client shows it: a JSON-RPC error (JSON-RPC 2.0 §5) to
 * each of its calls that has an id, "the same as the value of the id member in the Request
 * Object", or one with a null id when none has (or the body was not read), its data naming the
 * decision; an array for a batch (§6). MCP clients show an error's message and data.
 */
function rpcRefusal(d: Decision, rpc: RpcAnswer): string {
  const error = JSON.stringify({ code: rpc.code, message: d.description, data: { decision: d.id } });
  const ids = rpc.ids.filter((id) => id !== null);
  // Each id is a string or number token as the client sent it (api/decision/jsonrpc.ts checked it), spliced as it came.
  const answers = (ids.length ? ids : ['null']).map((id) => `{"jsonrpc":"2.0","id":${id},"error":${error}}`);
  return rpc.batch && ids.length ? `[${answers.join(',')}]` : answers[0]!;
}

/** `status`: what is sent (a sign-in redirect a gateway cannot pass on is sent as 401). */
export function refusalOf(box: string, d: Decision, wantsHtml: boolean, status: number = d.status): Refusal {
  // A challenge (401) stays the challenge an OAuth client acts on; what a policy or the body refuses is the MCP client's to show.
  if (d.rpc && (status === 400 || status === 403 || status === 413)) return { status, kind: 'json', body: rpcRefusal(d, d.rpc) };
  if (wantsHtml) {
    const title = words(status === 403 ? 'error.notAllowed' : status === 401 ? 'error.signInNeeded' : 'error.refused');
    // A gateway's door renders it whole, as the box's plain English page: it answers for an app, not a page of the box.
    // The decision's description is the engine's, as its JSON and its log say it.
    return {
      status,
      kind: 'html',
      body: messagePage(box, title, words('error.reference', { description: d.description, id: d.id }))(PLAIN_LOOK),
    };
  }
  const error = d.error ?? ERRORS[status] ?? 'temporarily_unavailable';
  return { status, kind: 'json', body: JSON.stringify({ ...errorFields(error, d.description), decision: d.id }) };
}
