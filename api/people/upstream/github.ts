// GitHub (and GitHub Enterprise Server) as a provider: an OAuth app's code flow, then its REST API
// for who signed in (/user: the numeric id, which stays when the login changes), their email
// (/user/emails: only the primary address GitHub verified) and their organizations and teams
// (groups "org" and "org/team"). With `organizations` set, only their members get in.
import type { CodeFlowServer } from './code-flow.js';
import { fetchJson, providerUrl } from './http.js';
import { UpstreamError, emailFrom, type GitHubSettings, type UpstreamProfile } from './profile.js';

const SCOPES = ['read:user', 'user:email', 'read:org'];
const ACCEPT = 'application/vnd.github+json';
/** Pages of 100 read at most per list: a person in more than 1000 organizations or teams is not. */
const MAX_PAGES = 10;

export function githubFlow(settings: GitHubSettings): CodeFlowServer {
  const site = providerUrl(settings.url ?? 'https://github.com', 'url');
  const base = site.href.replace(/\/$/, '');
  return {
    server: {
      issuer: site.origin,
      authorization_endpoint: providerUrl(`${base}/login/oauth/authorize`, 'url').href,
      token_endpoint: providerUrl(`${base}/login/oauth/access_token`, 'url').href,
    },
    clientId: settings.clientId,
    scopes: SCOPES,
    openid: false,
  };
}

interface GitHubUser {
  id: number;
  login: string;
  name?: string | null;
}

export async function githubProfile(settings: GitHubSettings, accessToken: string): Promise<UpstreamProfile> {
  const api = providerUrl(settings.apiUrl ?? 'https://api.github.com', 'apiUrl');
  const at = (path: string): URL => new URL(`${api.href.replace(/\/$/, '')}${path}`);
  const user = (await fetchJson(at('/user'), accessToken, 'GitHub /user', ACCEPT)).body as GitHubUser;
  if (!user || !Number.isSafeInteger(user.id) || typeof user.login !== 'string') throw new UpstreamError('invalid', 'GitHub /user: no id');
  const allowed = settings.organizations?.map((org) => org.toLowerCase());
  const inAllowed = (org: string): boolean => !allowed || allowed.includes(org.toLowerCase());
  const orgs = (await list(at('/user/orgs'), accessToken)).map((o) => member(o, 'login')).filter(isString);
  if (allowed && !orgs.some(inAllowed)) {
    throw new UpstreamError('refused', `GitHub user ${user.login} is in none of the allowed organizations`);
  }
  const teams = (await list(at('/user/teams'), accessToken))
    .map((t) => [member(member(t, 'organization'), 'login'), member(t, 'slug')])
    .filter((pair): pair is [string, string] => pair.every(isString))
    .map(([org, slug]) => `${org}/${slug}`);
  const emails = await list(at('/user/emails'), accessToken);
  const primary = emails.find((e) => member(e, 'primary') === true && member(e, 'verified') === true && isString(member(e, 'email')));
  const { email, unusableEmail } = emailFrom(primary === undefined ? undefined : member(primary, 'email'));
  const name = isString(user.name) && user.name !== '' ? user.name : user.login;
  return {
    subject: String(user.id),
    ...(email ? { email } : {}),
    ...(unusableEmail ? { unusableEmail } : {}),
    emailVerified: email !== undefined,
    name,
    groups: [...orgs, ...teams].filter((group) => inAllowed(group.split('/')[0]!)),
    claims: { id: user.id, login: user.login, name, ...(email ? { email } : {}) },
    amr: [],
  };
}

const isString = (v: unknown): v is string => typeof v === 'string';

/** `value[name]` when value is an object that has it. */
const member = (value: unknown, name: string): unknown =>
  value && typeof value === 'object' && Object.hasOwn(value, name) ? (value as Record<string, unknown>)[name] : undefined;

/** A list of GitHub's API, every page of it (its Link header's next, on the API's own origin). */
async function list(first: URL, accessToken: string): Promise<unknown[]> {
  const items: unknown[] = [];
  let url: URL | undefined = first;
  url.searchParams.set('per_page', '100');
  for (let page = 0; url && page < MAX_PAGES; page++) {
    const { body, response } = await fetchJson(url, accessToken, `GitHub ${first.pathname}`, ACCEPT);
    if (!Array.isArray(body)) throw new UpstreamError('invalid', `GitHub ${first.pathname}: not a list`);
    items.push(...body);
    const next = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
    url = next && new URL(next, url).origin === first.origin ? new URL(next, url) : undefined;
  }
  return items;
}
