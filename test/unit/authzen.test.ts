// What test/integration/authzen.test.ts cannot reach through a running box: the
// well-known URL of a PDP identifier whose base url has a path (AuthZEN 1.0 §9.2),
// and the answer to a decision the engine failed to make (§7.2.1).
import { expect } from 'chai';
import { Request, Router, type Response } from '../../api/http/router.js';
import type { Decision } from '../../api/decision/engine.js';
import { answerOf, metadataOf, metadataRoute, metadataUrl } from '../../api/http/routes/authzen.js';

describe('AuthZEN metadata and answers', function () {
  it("places the metadata as §9.2's examples do: the well-known string between host and path", function () {
    // §9.2.1: "when the resource identifier is https://pdp.example.com": GET /.well-known/authzen-configuration.
    expect(metadataUrl('https://pdp.example.com')).to.equal('https://pdp.example.com/.well-known/authzen-configuration');
    // §9.2: "a PDP supporting multiple tenants".
    expect(metadataUrl('https://pdp.example.com/tenant1')).to.equal('https://pdp.example.com/.well-known/authzen-configuration/tenant1');
    expect(metadataUrl('https://example.com:8443/auth/apps/wiki')).to.equal(
      'https://example.com:8443/.well-known/authzen-configuration/auth/apps/wiki',
    );
  });

  it("routes the metadata of each app under the base url's path, taken literally", async function () {
    // The box's own router, handed a bare request: which app (if any) the route takes from `path`.
    const matches = async (baseUrl: string, path: string): Promise<string | undefined> => {
      const router = new Router();
      let app: string | undefined;
      router.get(metadataRoute(baseUrl), (req, res) => {
        app = req.params.app;
        res.end();
      });
      await new Promise<void>((resolve) => {
        const req = Object.assign(Object.create(Request.prototype) as Request, { method: 'GET', url: path });
        router.handle(req, { end: resolve } as unknown as Response, () => resolve());
      });
      return app;
    };
    expect(metadataRoute('https://auth.example.com')).to.equal('/.well-known/authzen-configuration/apps/:app');
    expect(await matches('https://auth.example.com', '/.well-known/authzen-configuration/apps/wiki')).to.equal('wiki');
    expect(await matches('https://example.com/a.b(c):d', '/.well-known/authzen-configuration/a.b(c):d/apps/wiki')).to.equal('wiki');
    expect(await matches('https://example.com/a.b(c):d', '/.well-known/authzen-configuration/aXb(c):d/apps/wiki')).to.equal(undefined);
    expect(await matches('https://example.com/a.b(c):d', '/.well-known/authzen-configuration/apps/wiki')).to.equal(undefined);
  });

  it('publishes the PDP identifier and every endpoint, search included, at their default paths (§9.1, §10.1)', function () {
    expect(metadataOf('https://example.com/auth/apps/wiki')).to.deep.equal({
      policy_decision_point: 'https://example.com/auth/apps/wiki',
      access_evaluation_endpoint: 'https://example.com/auth/apps/wiki/access/v1/evaluation',
      access_evaluations_endpoint: 'https://example.com/auth/apps/wiki/access/v1/evaluations',
      search_subject_endpoint: 'https://example.com/auth/apps/wiki/access/v1/search/subject',
      search_resource_endpoint: 'https://example.com/auth/apps/wiki/access/v1/search/resource',
      search_action_endpoint: 'https://example.com/auth/apps/wiki/access/v1/search/action',
    });
  });

  it('answers a decision the engine could not make as false with context.error, an unreadable path as 400, a failure as 500', function () {
    const refused = (reason: Decision['reason'], description: string): Decision =>
      ({ id: 'd-1', allowed: false, reason, description }) as Decision;
    expect(answerOf(refused('error', 'the decision point could not decide: boom'))).to.deep.equal({
      decision: false,
      context: { error: { status: 500, message: 'the decision point could not decide: boom' } },
    });
    expect(answerOf(refused('bad-path', 'the path holds an empty segment (//)'))).to.deep.equal({
      decision: false,
      context: { error: { status: 400, message: 'the path holds an empty segment (//)' } },
    });
    expect(answerOf(refused('no-policy', 'no policy of this app allows the request'))).to.deep.equal({
      decision: false,
      context: { reason: 'no policy of this app allows the request' },
    });
    // The decision's id is not in the body (X-Boxauth-Decision carries it): identical requests, identical bodies.
    expect(answerOf({ id: 'd-2', allowed: true, reason: 'allowed', description: 'allowed by "p"' } as Decision)).to.deep.equal({
      decision: true,
    });
  });
});
