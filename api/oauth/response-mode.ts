// How the authorization endpoint's answer travels back to the client: its response mode (OAuth 2.0
// Multiple Response Type Encoding Practices §2.1, OAuth 2.0 Form Post Response Mode §2). Every
// answer to the client — a code, the implicit kinds' tokens, an error — is a ClientAnswer made here,
// once, with the box's issuer identifier in it; the door (api/http/routes/authorization-endpoint.ts)
// sends it: a redirect with the values in the query or the fragment, or a page that posts them.
// A response type is one of ./authorization-request.ts's RESPONSE_TYPES, known good before a mode is read.

/** The response modes the box serves (discovery's response_modes_supported). */
export type ResponseMode = 'query' | 'fragment' | 'form_post';
export const RESPONSE_MODES: readonly ResponseMode[] = ['query', 'fragment', 'form_post'];

/** The answer to the client: a redirect (query, fragment), or the values a page posts to the redirect URI (form_post). */
export type ClientAnswer = { via: 'redirect'; location: string } | { via: 'form_post'; action: string; fields: Record<string, string> };

/**
 * Multiple Response Type Encoding Practices §2.1: "the default Response Mode for the OAuth 2.0
 * code Response Type is the query encoding", and "for the OAuth 2.0 token Response Type is the
 * fragment encoding"; §3, of id_token (and "id_token token", §5): "The default Response Mode for
 * this Response Type is the fragment encoding".
 */
export const defaultResponseMode = (responseType: string): ResponseMode => (responseType === 'code' ? 'query' : 'fragment');

/**
 * Why the response mode a request asks for is refused, or undefined when it is served (or none is
 * asked). Multiple Response Type Encoding Practices §3 and §5: for a response type that returns an
 * ID token "the query encoding MUST NOT be used"; the box keeps every token out of the query (an
 * access token there lands in logs, history and Referer headers, which is why RFC 6749 §4.2.2
 * answers in the fragment). A page can post only to a web address: form_post to any other scheme
 * (a native app's) is refused rather than given to a form whose action the browser would run.
 */
export function responseModeProblem(responseType: string, asked: string | undefined, redirectUri: string): string | undefined {
  if (asked === undefined) return undefined;
  if (!RESPONSE_MODES.includes(asked as ResponseMode)) return `response_mode must be one of: ${RESPONSE_MODES.join(', ')}`;
  if (asked === 'query' && responseType !== 'code') return `response_mode=query cannot carry the tokens of response_type=${responseType}`;
  if (asked === 'form_post' && !/^https?:\/\//i.test(redirectUri)) return 'response_mode=form_post needs an http or https redirect URI';
  return undefined;
}

/** The mode a request's answer travels in: the one it asks for when it is served, else the response type's default. */
export function responseModeOf(responseType: string, asked: string | undefined, redirectUri: string): ResponseMode {
  return asked !== undefined && !responseModeProblem(responseType, asked, redirectUri)
    ? (asked as ResponseMode)
    : defaultResponseMode(responseType);
}

/**
 * The answer to the client at `redirectUri`, in `mode`, with the box's issuer identifier beside its
 * values. RFC 9207 §2: "Authorization servers supporting this specification MUST provide their
 * issuer identifier to clients by adding the iss parameter to all authorization responses" —
 * success and error alike, in every mode — so that a client talking to several authorization
 * servers can tell which one answered (a mix-up attack sends it the other's code). An error shown
 * on a page of the box is not a response to the client and carries none.
 */
export function answerTo(
  issuer: string,
  to: { redirectUri: string; responseMode: ResponseMode },
  values: Record<string, string | undefined>,
): ClientAnswer {
  const pairs = Object.entries({ ...values, iss: issuer }).filter((e): e is [string, string] => e[1] !== undefined);
  // Form Post §2: "The action attribute of the form MUST be the Client's Redirection URI", as registered.
  if (to.responseMode === 'form_post') return { via: 'form_post', action: to.redirectUri, fields: Object.fromEntries(pairs) };
  const url = new URL(to.redirectUri);
  if (to.responseMode === 'query') for (const [k, v] of pairs) url.searchParams.set(k, v);
  else url.hash = new URLSearchParams(pairs).toString();
  return { via: 'redirect', location: url.toString() };
}
