// What a refused request is told, whichever door it came through (api/http/gate-endpoints.ts
// writes it as an HTTP response, api/grpc/check.ts as Envoy's denied_response): a
// page for a person's browser, else RFC 6749-style JSON, both naming the decision.
import { errorFields } from '../errors.js';
import { PLAIN_LOOK } from '../ui/frame.js';
import { messagePage } from '../ui/pages.js';
import type { Decision } from '../decision/engine.js';

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
};

/** `status`: what is sent (a sign-in redirect a gateway cannot pass on is sent as 401). */
export function refusalOf(box: string, d: Decision, wantsHtml: boolean, status: number = d.status): Refusal {
  if (wantsHtml) {
    const title = status === 403 ? 'Not allowed' : status === 401 ? 'Sign in needed' : 'Request refused';
    // A gateway's door renders it whole, as the box's plain English page: it answers for an app, not a page of the box.
    return { status, kind: 'html', body: messagePage(box, title, `${d.description}. Reference: ${d.id}.`)(PLAIN_LOOK) };
  }
  const error = d.error ?? ERRORS[status] ?? 'temporarily_unavailable';
  return { status, kind: 'json', body: JSON.stringify({ ...errorFields(error, d.description), decision: d.id }) };
}
