// A stand-in for GitHub (the only stand-in the tests allow: GitHub cannot be run here). It answers
// as github.com and api.github.com do for an OAuth app (docs.github.com, "Authorizing OAuth apps"
// and the REST API's /user, /user/emails, /user/orgs, /user/teams): the authorization page signs
// in whoever the test says is signed in and sends the browser back with a code; the code, once,
// with its PKCE verifier and the app's credentials, gives a token; errors of the token endpoint
// come as GitHub sends them, with status 200. The API is under /api (apiUrl).
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GitHubAccount {
  id: number;
  login: string;
  name?: string | null;
  emails: { email: string; primary: boolean; verified: boolean }[];
  orgs: string[];
  /** "org/team-slug" */
  teams: string[];
}

interface Grant {
  account: GitHubAccount;
  redirectUri: string;
  challenge: string;
}

export class GitHubStandIn {
  /** Who is signed in at GitHub: the authorization page sends them back at once (the app authorized before). */
  signedIn: GitHubAccount | undefined;
  /** Items per page of the API's lists (GitHub's per_page, capped here to test the Link header's next). */
  pageSize = 100;
  private readonly codes = new Map<string, Grant>();
  private readonly tokens = new Map<string, GitHubAccount>();

  private readonly server = http.createServer((req, res) => void this.handle(req, res));
  readonly clientId = 'Iv1.standin';
  readonly clientSecret = randomBytes(20).toString('hex');

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get apiUrl(): string {
    return `${this.url}/api`;
  }

  static async start(): Promise<GitHubStandIn> {
    const standIn = new GitHubStandIn();
    await new Promise<void>((resolve) => standIn.server.listen(0, '127.0.0.1', resolve));
    return standIn;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const json = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body));
    };
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
      const back = new URL(url.searchParams.get('redirect_uri')!);
      if (url.searchParams.get('client_id') !== this.clientId || url.searchParams.get('code_challenge_method') !== 'S256') {
        res.writeHead(400).end('bad request');
        return;
      }
      if (!this.signedIn) back.searchParams.set('error', 'access_denied');
      else {
        const code = randomBytes(10).toString('hex');
        this.codes.set(code, { account: this.signedIn, redirectUri: back.href, challenge: url.searchParams.get('code_challenge')! });
        back.searchParams.set('code', code);
      }
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      res.writeHead(302, { Location: back.href }).end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      const form = new URLSearchParams(await body(req));
      const [id, secret] = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64')
        .toString()
        .split(':')
        .map(decodeURIComponent);
      const grant = this.codes.get(form.get('code') ?? '');
      this.codes.delete(form.get('code') ?? '');
      const verifier = form.get('code_verifier') ?? '';
      if (id !== this.clientId || secret !== this.clientSecret) return json(200, { error: 'incorrect_client_credentials' });
      if (!grant || grant.redirectUri !== form.get('redirect_uri')) return json(200, { error: 'bad_verification_code' });
      if (createHash('sha256').update(verifier).digest('base64url') !== grant.challenge)
        return json(200, { error: 'bad_verification_code' });
      const token = `gho_${randomBytes(16).toString('hex')}`;
      this.tokens.set(token, grant.account);
      return json(200, { access_token: token, token_type: 'bearer', scope: 'read:org,read:user,user:email' });
    }
    const account = this.tokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
    if (!url.pathname.startsWith('/api/')) return json(404, { message: 'Not Found' });
    if (!account) return json(401, { message: 'Bad credentials' });
    const page = <T>(items: T[]): void => {
      const size = Math.min(Number(url.searchParams.get('per_page') ?? 30), this.pageSize);
      const n = Number(url.searchParams.get('page') ?? 1);
      const next = new URL(url);
      next.searchParams.set('page', String(n + 1));
      const more = items.length > n * size;
      json(200, items.slice((n - 1) * size, n * size), more ? { Link: `<${next.href}>; rel="next"` } : {});
    };
    switch (url.pathname) {
      case '/api/user':
        return json(200, { id: account.id, login: account.login, name: account.name ?? null, type: 'User' });
      case '/api/user/emails':
        return page(account.emails.map((e) => ({ ...e, visibility: e.primary ? 'private' : null })));
      case '/api/user/orgs':
        return page(account.orgs.map((login, i) => ({ login, id: 1000 + i })));
      case '/api/user/teams':
        return page(
          account.teams.map((t) => {
            const [org, slug] = t.split('/');
            return { slug, name: slug, organization: { login: org } };
          }),
        );
      default:
        return json(404, { message: 'Not Found' });
    }
  }
}

function body(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}
