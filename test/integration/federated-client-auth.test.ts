// Federated client authentication: a Client authenticated by a token a third party issued to a
// workload (RFC 7523 §2.2 client assertion) - a CI job's OIDC token (GitHub Actions', GitLab CI's
// shapes) - bound to it by issuer + subject (exact, or a pattern) + audience in
// auth.workload.federated. The CI journey runs through openid-client as a job's script would. The
// attacks: another client's subject, a pattern that would be a bare wildcard, a branch the pattern
// does not name, a token for another audience, an expired one, and issuers whose keys are at a
// loopback address the box was not allowed (directly, or through a discovery document pointing there).
import { expect } from 'chai';
import * as oauth from 'openid-client';
import { assertionAuth, assertionRequest, claimsOf } from '../support/assertion.js';
import { Box, eventually, type JsonResponse } from '../support/box.js';
import { TestIssuer } from '../support/issuer.js';
import { startAll } from '../support/start-all.js';

/** What a GitHub Actions job's ID token carries (docs.github.com, "About security hardening with OpenID Connect"). */
function githubClaims(repo: string, ref: string, audience: string): Record<string, unknown> {
  return {
    sub: `repo:${repo}:ref:${ref}`,
    aud: audience,
    repository: repo,
    repository_owner: repo.split('/')[0],
    ref,
    ref_type: 'branch',
    workflow: 'deploy',
    event_name: 'push',
    runner_environment: 'github-hosted',
  };
}

/** What a GitLab CI job's ID token carries (id_tokens: in .gitlab-ci.yml). */
function gitlabClaims(project: string, branch: string, audience: string): Record<string, unknown> {
  return {
    sub: `project_path:${project}:ref_type:branch:ref:${branch}`,
    aud: audience,
    project_path: project,
    namespace_path: project.split('/')[0],
    ref: branch,
    ref_type: 'branch',
    ref_protected: 'true',
    pipeline_source: 'push',
  };
}

describe('federated client authentication (CI tokens, auth.workload.federated)', function () {
  this.timeout(120_000);
  let github: TestIssuer;
  let gitlab: TestIssuer;
  /** An issuer whose discovery document sends the box to 127.0.0.2 for its keys. */
  let pointing: TestIssuer;
  let box: Box;
  let root: string;

  const putClient = (id: string, workload: Record<string, unknown>): Promise<JsonResponse> =>
    box.json(
      'PUT',
      `/Client/${id}`,
      { grant_types: ['client_credentials'], auth: { client_credentials: { token_format: 'jwt' }, workload } },
      root,
    );

  async function refused(assertion: string, pattern: RegExp, clientId?: string): Promise<void> {
    const res = await assertionRequest(box, assertion, clientId);
    expect(res.status, res.text).to.equal(401);
    expect(res.body.error).to.equal('invalid_client');
    expect(res.body.error_description).to.match(pattern);
  }

  before(async function () {
    [github, gitlab, pointing] = await startAll([TestIssuer.start(), TestIssuer.start(), TestIssuer.start({ jwksHost: '127.0.0.2' })]);
    box = await Box.start({
      env: {
        BOXAUTH_TRUSTED_ISSUERS: JSON.stringify([
          github.trusted,
          gitlab.trusted,
          // Its address is allowed, not 127.0.0.2, where its discovery document points.
          pointing.trusted,
          // Trusted, and its CA known, but its (loopback) address not allowed: as in production.
          { issuer: `${github.url}/unallowed`, jwksUri: `${github.url}/jwks`, caBundle: github.caPem },
        ]),
      },
    });
    root = await box.rootToken();
    const deploy = await putClient('deploy', { federated: [{ issuer: github.url, subject: 'repo:octo-org/shop:ref:refs/heads/main' }] });
    expect(deploy.status, deploy.text).to.equal(201);
    const releases = await putClient('releases', {
      federated: [
        { issuer: gitlab.url, subjectPattern: 'project_path:shop-group/*:ref_type:branch:ref:release-*', audience: 'boxauth-ci' },
      ],
    });
    expect(releases.status, releases.text).to.equal(201);
    await putClient('other-team', { federated: [{ issuer: github.url, subject: 'repo:octo-org/billing:ref:refs/heads/main' }] });
    await putClient('pointed', { federated: [{ issuer: pointing.url, subject: 'anything:x' }] });
    await putClient('unallowed', { federated: [{ issuer: `${github.url}/unallowed`, subject: 'repo:octo-org/shop:ref:refs/heads/main' }] });
  });
  after(async function () {
    await box?.stop();
    await Promise.all([github?.stop(), gitlab?.stop(), pointing?.stop()]);
  });

  it("a GitHub Actions job's token → a token from the box through openid-client; the session names the job's subject", async function () {
    const jobToken = await github.jwt(githubClaims('octo-org/shop', 'refs/heads/main', box.url));
    const config = await oauth.discovery(
      new URL(box.url),
      'deploy',
      undefined,
      assertionAuth(() => jobToken),
      {
        algorithm: 'oauth2',
        execute: [oauth.allowInsecureRequests],
      },
    );
    const tokens = await oauth.clientCredentialsGrant(config);
    expect(claimsOf(tokens.access_token).client_id).to.equal('deploy');
    const session = (await box.json('GET', `/Session/${claimsOf(tokens.access_token).jti}`, undefined, root)).body;
    expect(session.details.federated).to.deep.equal({ issuer: github.url, subject: 'repo:octo-org/shop:ref:refs/heads/main' });
    // Without client_id, the subject finds its one client.
    expect((await assertionRequest(box, jobToken)).status).to.equal(200);
  });

  it("a GitLab CI job's token matches a subject pattern, with the binding's own audience", async function () {
    const job = await gitlab.jwt(gitlabClaims('shop-group/api', 'release-1.4', 'boxauth-ci'));
    const res = await assertionRequest(box, job, 'releases');
    expect(res.status, res.text).to.equal(200);
    expect(claimsOf(res.body.access_token).client_id).to.equal('releases');
  });

  it('refuses a branch, a project or a kind of subject the pattern does not name', async function () {
    // `*` never crosses a colon: a merge request's pipeline is not a branch's.
    await refused(await gitlab.jwt(gitlabClaims('shop-group/api', 'main', 'boxauth-ci')), /is not bound to client 'releases'/, 'releases');
    await refused(await gitlab.jwt(gitlabClaims('other-group/api', 'release-1', 'boxauth-ci')), /is not bound to any client/);
    const mergeRequest = await gitlab.jwt({
      ...gitlabClaims('shop-group/api', 'release-1', 'boxauth-ci'),
      sub: 'project_path:shop-group/api:ref_type:branch:ref:release-1:mr:7',
    });
    await refused(mergeRequest, /is not bound/, 'releases');
  });

  it("refuses a token of a trusted issuer for another client's subject", async function () {
    const billing = await github.jwt(githubClaims('octo-org/billing', 'refs/heads/main', box.url));
    await refused(billing, /subject 'repo:octo-org\/billing:ref:refs\/heads\/main' of issuer .* is not bound to client 'deploy'/, 'deploy');
    const shop = await github.jwt(githubClaims('octo-org/shop', 'refs/heads/main', box.url));
    await refused(shop, /is not bound to client 'other-team'/, 'other-team');
    // Another issuer's token for the same subject.
    await refused(await gitlab.jwt(githubClaims('octo-org/shop', 'refs/heads/main', box.url)), /is not bound to client 'deploy'/, 'deploy');
  });

  it('tells neither which issuers the box trusts nor which clients exist', async function () {
    const stranger = await TestIssuer.start();
    try {
      const res = await assertionRequest(box, await stranger.jwt(githubClaims('octo-org/shop', 'refs/heads/main', box.url)), 'deploy');
      expect(res.status, res.text).to.equal(401);
      expect(res.body.error_description).to.match(/is not trusted by this box/);
      for (const trusted of [github.url, gitlab.url]) expect(res.body.error_description).to.not.include(trusted);
    } finally {
      await stranger.stop();
    }
    // A client that does not exist is refused as one that exists and does not bind the subject.
    const shop = await github.jwt(githubClaims('octo-org/shop', 'refs/heads/main', box.url));
    const existing = await assertionRequest(box, shop, 'other-team');
    const missing = await assertionRequest(box, shop, 'no-such-team');
    expect(missing.status, missing.text).to.equal(401);
    expect(missing.body.error_description).to.equal(existing.body.error_description.replace("'other-team'", "'no-such-team'"));
  });

  it('attack: a token made for another service does not tell which clients bind its subject', async function () {
    // Two clients bind one subject; a service the job sent its token to (its own audience) replays it here.
    for (const id of ['twins-a', 'twins-b']) {
      const res = await putClient(id, { federated: [{ issuer: github.url, subject: 'repo:octo-org/twins:ref:refs/heads/main' }] });
      expect(res.status, res.text).to.equal(201);
    }
    const replayed = await github.jwt(githubClaims('octo-org/twins', 'refs/heads/main', 'https://deploy-dashboard.example'));
    const res = await assertionRequest(box, replayed);
    expect(res.status, res.text).to.equal(401);
    expect(res.body.error_description).to.match(/is bound to several clients; send client_id/);
    expect(res.body.error_description).to.not.match(/twins-a|twins-b/);
  });

  it('refuses a token for another audience, an expired one, and one signed by another key', async function () {
    await refused(
      await github.jwt(githubClaims('octo-org/shop', 'refs/heads/main', 'https://github.com/octo-org')),
      /wrong audience/,
      'deploy',
    );
    // A binding with its own audience accepts that one only, not the box's URL.
    await refused(await gitlab.jwt(gitlabClaims('shop-group/api', 'release-2', box.url)), /accepts only boxauth-ci/, 'releases');
    const past = Math.floor(Date.now() / 1000) - 3600;
    await refused(
      await github.jwt({ ...githubClaims('octo-org/shop', 'refs/heads/main', box.url), iat: past - 600, nbf: past - 600, exp: past }),
      /expired/,
      'deploy',
    );
    const forged = await gitlab.jwt({ ...githubClaims('octo-org/shop', 'refs/heads/main', box.url), iss: github.url });
    await refused(forged, /does not verify|does not publish/, 'deploy');
  });

  it("refuses another issuer's ServiceAccount token for a client bound to ServiceAccounts of the box's cluster", async function () {
    // Whoever can make ServiceAccount pay/api in a cluster the box trusts is not the box's own pay/api.
    await putClient('in-cluster', { serviceAccounts: [{ namespace: 'pay', name: 'api' }] });
    const elsewhere = await github.token(box.url, 'pay', 'api');
    // The routing of a request without client_id learns of the new Client through the change feed.
    await eventually('the new Client routed to', async () =>
      /binds ServiceAccounts/.test((await assertionRequest(box, elsewhere)).body.error_description ?? ''),
    );
    await refused(elsewhere, /binds ServiceAccounts of this box's cluster; for another cluster's, set auth.workload.issuer/);
    await refused(elsewhere, /binds ServiceAccounts of this box's cluster/, 'in-cluster');
  });

  it('refuses a subject pattern that is a bare wildcard, and a binding with both subject and pattern (422, nothing written)', async function () {
    for (const subjectPattern of ['*', 'repo:*', '*:octo-org/shop:ref:refs/heads/main', 'repo:', 'a:b*c*d*e*f*g*h*i*j*k']) {
      const res = await putClient('wild', {
        federated: [{ issuer: github.url, ...(subjectPattern === 'repo:' ? { subject: 'x' } : {}), subjectPattern }],
      });
      expect(res.status, `${subjectPattern}: ${res.text}`).to.equal(422);
    }
    expect((await box.json('GET', '/Client/wild', undefined, root)).status).to.equal(404);
  });

  it("refuses an issuer's keys at an address the box was not allowed, wherever its discovery document points", async function () {
    // pointing's discovery names https://127.0.0.2:<port>/jwks, where its keys are served too; only 127.0.0.1 is allowed.
    const viaDiscovery = await pointing.jwt({ sub: 'anything:x', aud: box.url });
    await refused(viaDiscovery, /signing keys of issuer .* could not be fetched/, 'pointed');
    const direct = await github.jwt({ ...githubClaims('octo-org/shop', 'refs/heads/main', box.url), iss: `${github.url}/unallowed` });
    await refused(direct, /could not be fetched/, 'unallowed');
    // The requester is not told the address; the box's log says why.
    const res = await assertionRequest(box, direct, 'unallowed');
    expect(res.body.error_description).to.not.match(/special-use|127\.0\.0\.2/);
    await eventually('the cause logged', async () => box.logs.some((l) => l.includes('special-use address')));
  });
});
