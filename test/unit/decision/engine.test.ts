// The decision point's steps (api/decision/engine.ts decide()), each on the input that makes it
// answer: no App, an ambiguous path, nobody signed in, a subject AuthZEN names that is no one, a
// step-up, deny by default, a failure. The steps that check a token's session (a live one, DPoP,
// the audience, a stale sign-in cookie) are in test/integration/gate.test.ts and dpop.test.ts,
// against a real box.
import { expect } from 'chai';
import { decide, type DecisionServices, type GateRequest } from '../../../api/decision/engine.js';
import { UNAVAILABLE_RETRY_SECONDS } from '../../../api/db/unavailable.js';
import type { AppQuestion, AppVerdict } from '../../../api/policy/evaluate.js';
import type { App, PrincipalUser } from '../../../api/types.js';

const MFA = 'urn:boxauth:acr:mfa';

const app: App = { resourceType: 'App', id: 'reports', urls: ['https://reports.example'], signIn: { client: 'reports-sign-in' } };
const ada: PrincipalUser = {
  id: '7',
  subject: '5f0c2b7e-1d3a-4e59-8b6c-2a9d4f1e7c30',
  email: 'ada@example.com',
  emailVerified: true,
  groups: [{ id: '1', name: 'R&D, Sales' }],
  data: {},
  scim: {},
  identities: [],
};

/** Just enough of a box for decide(): one App, one user, and the policies' verdict `verdict`. */
function services(verdict: AppVerdict | Error, logged: string[] = []): DecisionServices {
  const svc = {
    config: { baseUrl: 'https://box.example' },
    apps: {
      byId: (id: string) => (verdict instanceof Error ? Promise.reject(verdict) : Promise.resolve(id === app.id ? app : undefined)),
      byHost: (host: string) => Promise.resolve(host === 'reports.example' ? app : undefined),
    },
    users: { get: (id: string) => Promise.resolve(id === ada.id ? ada : undefined) },
    // As decideApp answers: the verdict, and the request object the policies saw.
    policies: { decideApp: (_app: unknown, _subject: unknown, q: AppQuestion) => Promise.resolve({ ...verdict, request: q.request }) },
    log: {
      error: (_fields: unknown, message: string) => void logged.push(message),
      warn: (_fields: unknown, message: string) => void logged.push(message),
    },
  };
  // A test double: decide() reaches only the members above for requests without a token.
  return svc as unknown as DecisionServices;
}

const ask = (change: Partial<GateRequest> = {}): GateRequest => ({
  door: 'forward-auth',
  app: 'reports',
  method: 'GET',
  host: 'reports.example',
  target: '/reports/7?year=2024',
  headers: {},
  credential: { cookies: {} },
  ...change,
});

const browser = { accept: 'text/html,application/xhtml+xml' };
const allows: AppVerdict = { allowed: true, outcomes: [{ id: 'staff', verdict: 'allows' }] };
const allowsNone: AppVerdict = { allowed: false, outcomes: [{ id: 'staff', verdict: 'does not allow' }] };
const needsMfa: AppVerdict = { allowed: false, outcomes: [{ id: 'staff', verdict: 'needs a stronger sign-in', acr: MFA }] };
/** Where the App's metadata is (RFC 9728 §3.1), as every challenge of the App names it (§5.1). */
const METADATA = 'resource_metadata="https://reports.example/.well-known/oauth-protected-resource"';

/** A person an AuthZEN PEP names, the PEP may read them (or, with `mayRead`, those it says). */
const named = (user: string, mayRead: (id: string) => Promise<boolean> = () => Promise.resolve(true)) => ({ user, mayRead });

describe('the decision point, step by step', function () {
  it('find the App: a request to no App is refused (403 no-app), by name or by host', async function () {
    expect(await decide(services(allows), ask({ app: 'payroll' }))).to.deep.include({
      allowed: false,
      status: 403,
      reason: 'no-app',
      description: 'no app "payroll"',
      app: null,
    });
    expect(await decide(services(allows), ask({ app: undefined, host: 'payroll.example' }))).to.deep.include({
      status: 403,
      description: 'no app at host "payroll.example"',
    });
    expect(await decide(services(allows), ask({ app: undefined }))).to.deep.include({ status: 200, app: 'reports' });
  });

  it('read the target: a path with two meanings is refused (400 bad-path), before any policy', async function () {
    expect(await decide(services(allows), ask({ target: '/public/../admin' }))).to.deep.include({
      allowed: false,
      status: 400,
      reason: 'bad-path',
      request: null,
      outcomes: [],
    });
  });

  it('nobody signed in: a browser is sent to sign in and back (302), anything else gets 401 with a Bearer challenge', async function () {
    const page = await decide(services(needsMfa), ask({ headers: browser }));
    expect(page).to.deep.include({ status: 302, reason: 'sign-in', description: 'no policy of this app applies to the request' });
    expect(page.location).to.equal(
      `https://reports.example/.boxauth/start?${new URLSearchParams({ rd: '/reports/7?year=2024', acr: MFA })}`,
    );
    expect(await decide(services(allowsNone), ask())).to.deep.include({
      status: 401,
      reason: 'sign-in',
      description: 'no policy of this app allows the request',
      challenge: `Bearer realm="reports", ${METADATA}`,
    });
    // A browser's POST is not sent away from what it was sending: it is told how to authenticate.
    expect(await decide(services(allowsNone), ask({ method: 'POST', headers: browser }))).to.deep.include({ status: 401 });
  });

  it('check the session: a subject AuthZEN names is who it is now; no one is 401 bad-token', async function () {
    expect(await decide(services(allows), ask({ door: 'authzen', credential: named('8') }))).to.deep.include({
      status: 401,
      reason: 'bad-token',
      description: 'no such user',
    });
    const allowed = await decide(services(allows), ask({ door: 'authzen', credential: named('7') }));
    expect(allowed).to.deep.include({ allowed: true, status: 200, reason: 'allowed', description: 'allowed by "staff"' });
    expect(allowed.caller.user).to.equal(ada);
    expect(allowed.upstream).to.deep.include({ 'X-Auth-Request-User': '7', 'X-Auth-Request-Groups': 'R&D%2C%20Sales' });
  });

  it('check the session: a person the PEP may not read is nobody, answered as no one (no oracle on people)', async function () {
    const unreadable = await decide(services(allows), ask({ door: 'authzen', credential: named('7', () => Promise.resolve(false)) }));
    const madeUp = await decide(services(allows), ask({ door: 'authzen', credential: named('8', () => Promise.resolve(false)) }));
    for (const d of [unreadable, madeUp]) {
      expect(d).to.deep.include({
        allowed: false,
        status: 401,
        reason: 'bad-token',
        description: 'no such user',
        request: null,
        outcomes: [],
      });
    }
  });

  it('step up: a caller short of the sign-in a policy wants gets 401 insufficient_user_authentication (RFC 9470 §3)', async function () {
    const d = await decide(services(needsMfa), ask({ door: 'authzen', credential: named('7'), headers: browser }));
    const why = `a policy of this app allows the request only after a sign-in of class ${MFA}`;
    expect(d).to.deep.include({ status: 401, reason: 'step-up', acr: MFA, description: why });
    expect(d.challenge).to.equal(
      `Bearer realm="reports", error="insufficient_user_authentication", error_description="${why}", acr_values="${MFA}", ${METADATA}`,
    );
  });

  it('more scope: a token short of a policy scope gets 403 insufficient_scope naming all of it (RFC 6750 §3.1)', async function () {
    const needsScope: AppVerdict = {
      allowed: false,
      outcomes: [
        { id: 'writers', verdict: 'needs more scope', scope: ['reports:read', 'reports:write'] },
        { id: 'readers', verdict: 'needs more scope', scope: ['reports:read'] },
      ],
    };
    const d = await decide(services(needsScope), ask({ door: 'authzen', credential: named('7') }));
    const why = 'a policy of this app allows the request only with a token of scope "reports:read"';
    expect(d).to.deep.include({ status: 403, reason: 'insufficient-scope', error: 'insufficient_scope', description: why });
    // The fewest scopes that would do: the readers' policy.
    expect(d.challenge).to.equal(
      `Bearer realm="reports", error="insufficient_scope", error_description="${why.replace(/"/g, "'")}", scope="reports:read", ${METADATA}`,
    );
  });

  it('one policy wants scope, another a stronger sign-in: the scope is asked for; acr and scope of one policy: a step-up naming both', async function () {
    const either: AppVerdict = {
      allowed: false,
      outcomes: [
        { id: 'strong', verdict: 'needs a stronger sign-in', acr: MFA },
        { id: 'scoped', verdict: 'needs more scope', scope: ['reports:admin'] },
      ],
    };
    expect(await decide(services(either), ask({ door: 'authzen', credential: named('7') }))).to.deep.include({
      status: 403,
      reason: 'insufficient-scope',
    });
    const both: AppVerdict = {
      allowed: false,
      outcomes: [{ id: 'strong', verdict: 'needs a stronger sign-in', acr: MFA, scope: ['reports:admin'] }],
    };
    const d = await decide(services(both), ask({ door: 'authzen', credential: named('7') }));
    expect(d).to.deep.include({ status: 401, reason: 'step-up', acr: MFA });
    expect(d.challenge).to.match(/, acr_values="urn:boxauth:acr:mfa", scope="reports:admin", resource_metadata="[^"]+"$/);
  });

  it('deny by default: no policy allows it (403 no-policy)', async function () {
    expect(await decide(services(allowsNone), ask({ door: 'authzen', credential: { client: 'robot' } }))).to.deep.include({
      allowed: false,
      status: 403,
      reason: 'no-policy',
      description: 'no policy of this app allows the request',
    });
  });

  it('fail closed: a decision that fails is 503, the database being out says when to try again', async function () {
    const logged: string[] = [];
    const down = Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:5432'), { code: 'ECONNREFUSED' });
    const out = await decide(services(down, logged), ask());
    expect(out).to.deep.include({ allowed: false, status: 503, reason: 'error', app: null, retryAfter: UNAVAILABLE_RETRY_SECONDS });
    expect(out.description).not.to.include('10.1.2.3');
    const broken = await decide(services(new Error('a bug'), logged), ask());
    expect(broken).to.deep.include({ status: 503, description: 'the decision point could not decide; see its log' });
    expect(broken).not.to.have.property('retryAfter');
    expect(logged).to.deep.equal([
      'the database is unreachable or overloaded; the request is refused',
      'a decision failed; the request is refused',
    ]);
  });
});
