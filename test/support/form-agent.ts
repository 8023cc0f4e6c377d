// A browser without JavaScript, for integration tests of the server-rendered
// flows: it keeps cookies (sent, as a browser sends them, only to the paths their
// Path attribute covers: RFC 6265 §5.1.4), reads a page's hidden fields (CSRF
// token, carried parameters) and submits its forms. Chromium drives the same
// pages in test/e2e.
import type { Box, JsonResponse } from './box.js';

export class FormAgent {
  /** `sent`: headers every request of this browser carries (its User-Agent, its Accept-Language). */
  constructor(
    private readonly box: Box,
    private readonly sent: Record<string, string> = {},
    private readonly jar = new Map<string, { value: string; path: string }>(),
  ) {}

  /** This browser, its cookies shared, sending its requests to `box`: another process of the box (a Service's other pod). */
  at(box: Box): FormAgent {
    return new FormAgent(box, this.sent, this.jar);
  }

  async get(path: string): Promise<JsonResponse> {
    return this.remember(await this.box.request('GET', path, { headers: this.headers(path) }));
  }

  async post(path: string, fields: Record<string, string>): Promise<JsonResponse> {
    return this.remember(
      await this.box.request('POST', path, {
        headers: { ...this.headers(path), 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields).toString(),
      }),
    );
  }

  /** Posts JSON as a page's script does (the passkeys script: its CSRF token in x-csrf-token). */
  async postJson(path: string, body: unknown, headers: Record<string, string> = {}): Promise<JsonResponse> {
    return this.remember(
      await this.box.request('POST', path, {
        headers: { ...this.headers(path), 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify(body),
      }),
    );
  }

  /** The cookies it would send to `path`, as a Cookie header (a test posting with another agent's browser). */
  cookieHeader(path = '/auth/'): Record<string, string> {
    return this.headers(path);
  }

  /** The value of this browser's cookie `name`, if it holds one (a test that tampers with a cookie). */
  cookie(name: string): string | undefined {
    return this.jar.get(name)?.value;
  }

  /** Changes the value of this browser's cookie `name`, its Path kept (a test that tampers with a cookie). */
  setCookie(name: string, value: string): void {
    const held = this.jar.get(name);
    if (!held) throw new Error(`this browser holds no cookie ${name}`);
    this.jar.set(name, { ...held, value });
  }

  /** Signs in through the sign-in page; the answer is the redirect (303) or the page again. */
  async signIn(email: string, password: string, returnTo = '/auth/signed-in'): Promise<JsonResponse> {
    const page = await this.get(`/auth/sign-in?return_to=${encodeURIComponent(returnTo)}`);
    return this.post('/auth/sign-in', { ...hiddenFields(page.text), email, password });
  }

  /**
   * A way to post the sign-in form of one page load (its CSRF token and cookies)
   * as often and as concurrently as a test likes: what a script guessing
   * passwords does. The agent's own cookies do not change.
   */
  signInPoster(): Promise<(email: string, password: string, headers?: Record<string, string>) => Promise<JsonResponse>> {
    return this.poster('/auth/sign-in');
  }

  /** The same for the sign-up form: what a script creating accounts does. */
  signUpPoster(): Promise<(email: string, password: string, headers?: Record<string, string>) => Promise<JsonResponse>> {
    return this.poster('/auth/sign-up');
  }

  private async poster(
    form: string,
  ): Promise<(email: string, password: string, headers?: Record<string, string>) => Promise<JsonResponse>> {
    const page = await this.get(form);
    const fields = hiddenFields(page.text);
    const cookies = this.headers(form);
    return (email, password, headers = {}) =>
      this.box.request('POST', form, {
        headers: { ...cookies, 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
        body: new URLSearchParams({ ...fields, email, password }).toString(),
      });
  }

  /** Submits the consent page `page` with Allow or Deny. */
  consent(page: JsonResponse, decision: 'allow' | 'deny'): Promise<JsonResponse> {
    return this.post('/auth/consent', { ...hiddenFields(page.text), decision });
  }

  /** What this browser sends with a request to `path`: its headers, and the cookies whose Path covers it. */
  private headers(path: string): Record<string, string> {
    const pathname = new URL(path, 'http://box').pathname;
    const sent = [...this.jar].filter(([, cookie]) => pathMatches(pathname, cookie.path));
    return { ...this.sent, ...(sent.length ? { Cookie: sent.map(([name, cookie]) => `${name}=${cookie.value}`).join('; ') } : {}) };
  }

  private remember(res: JsonResponse): JsonResponse {
    for (const cookie of res.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      const path = /;\s*Path=([^;]*)/i.exec(cookie)?.[1]?.trim() || '/';
      if (/Max-Age=0/i.test(cookie) || value === '') this.jar.delete(name);
      else this.jar.set(name, { value, path });
    }
    return res;
  }
}

/** RFC 6265 §5.1.4: a cookie of Path `cookiePath` goes to `path`. */
function pathMatches(path: string, cookiePath: string): boolean {
  if (path === cookiePath) return true;
  if (!path.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || path[cookiePath.length] === '/';
}

const unescape = (s: string): string =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** The hidden inputs of a page, by name. */
export function hiddenFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g)) fields[unescape(m[1]!)] = unescape(m[2]!);
  return fields;
}

/** The hidden inputs of the page's form that posts to `action` (a page of several forms: the account page). */
export function formFields(html: string, action: string): Record<string, string> {
  const form = new RegExp(`<form method="post" action="${action.replace(/[/.]/g, '\\$&')}">([\\s\\S]*?)</form>`).exec(html);
  if (!form) throw new Error(`no form posting to ${action} in:\n${html}`);
  return hiddenFields(form[1]!);
}
