import { expect } from 'chai';
import { codeAuthorizationUrl, exchangeCode, type CodeFlowServer } from '../../../../api/people/upstream/code-flow.js';
import { providerUrl } from '../../../../api/people/upstream/http.js';
import { UpstreamError, type UpstreamFailure } from '../../../../api/people/upstream/profile.js';

const request = { state: 'state-1', nonce: 'nonce-1', codeVerifier: 'v'.repeat(43), redirectUri: 'https://box.example/cb' };

/** A provider whose token endpoint is a closed port: a callback that passes its checks ends 'unavailable' there. */
const flow = (more: Record<string, unknown> = {}, openid = true): CodeFlowServer => ({
  server: {
    issuer: 'https://idp.example',
    authorization_endpoint: 'https://idp.example/authorize?tenant=t',
    token_endpoint: 'http://127.0.0.1:9/token',
    ...more,
  },
  clientId: 'box-a',
  scopes: ['openid', 'email'],
  openid,
});

async function outcome(server: CodeFlowServer, query: string): Promise<UpstreamFailure> {
  try {
    await exchangeCode(server, 'secret', request, new URL(`https://box.example/cb?${query}`), Date.now);
  } catch (err) {
    if (err instanceof UpstreamError) return err.failure;
    throw err;
  }
  throw new Error('no failure');
}

describe('the upstream code flow', function () {
  it('asks for a code with PKCE S256 and state, and a nonce of an OpenID provider only', async function () {
    const url = await codeAuthorizationUrl(flow(), request);
    expect(url.origin + url.pathname).to.equal('https://idp.example/authorize');
    expect(Object.fromEntries(url.searchParams)).to.deep.include({
      tenant: 't',
      response_type: 'code',
      client_id: 'box-a',
      redirect_uri: request.redirectUri,
      scope: 'openid email',
      state: 'state-1',
      nonce: 'nonce-1',
      code_challenge_method: 'S256',
    });
    expect(url.searchParams.get('code_challenge')).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect((await codeAuthorizationUrl(flow({}, false), request)).searchParams.has('nonce')).to.equal(false);
  });

  it('refuses a callback of another state before sending its code anywhere', async function () {
    expect(await outcome(flow(), 'code=c&state=state-2')).to.equal('invalid');
    expect(await outcome(flow(), 'code=c')).to.equal('invalid');
    expect(await outcome(flow(), 'code=c&state=state-1')).to.equal('unavailable');
  });

  it('RFC 9207: where the provider says it sends iss, a callback without it or with another is refused', async function () {
    const strict = flow({ authorization_response_iss_parameter_supported: true });
    expect(await outcome(strict, 'code=c&state=state-1')).to.equal('invalid');
    expect(await outcome(strict, `code=c&state=state-1&iss=${encodeURIComponent('https://evil.example')}`)).to.equal('invalid');
    expect(await outcome(strict, `code=c&state=state-1&iss=${encodeURIComponent('https://idp.example')}`)).to.equal('unavailable');
    // A provider that does not say so may still send it: then it must be right too (a mix-up).
    expect(await outcome(flow(), `code=c&state=state-1&iss=${encodeURIComponent('https://evil.example')}`)).to.equal('invalid');
  });

  it("the provider's error at the callback: access_denied refused, a temporary one unavailable, another invalid", async function () {
    expect(await outcome(flow(), 'error=access_denied&state=state-1')).to.equal('refused');
    expect(await outcome(flow(), 'error=temporarily_unavailable&state=state-1')).to.equal('unavailable');
    expect(await outcome(flow(), 'error=invalid_request&state=state-1')).to.equal('invalid');
    expect(await outcome(flow(), 'error=access_denied&state=forged')).to.equal('invalid');
  });

  it('calls a provider over https only, or http on a loopback host', function () {
    for (const ok of ['https://idp.example/x', 'http://127.0.0.1:8080/', 'http://localhost/', 'http://[::1]:1/']) {
      expect(providerUrl(ok, 'url').href).to.equal(new URL(ok).href);
    }
    for (const bad of ['http://idp.example/', 'http://10.0.0.1/', 'ftp://idp.example/', 'not a url']) {
      expect(() => providerUrl(bad, 'url'), bad).to.throw(UpstreamError);
    }
  });
});
