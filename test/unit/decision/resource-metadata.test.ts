// Where an App's Protected Resource Metadata is (RFC 9728 §3.1), what a challenge names (§5.1),
// and what the document says (§2, §3.3).
import { expect } from 'chai';
import { appMetadata, metadataPathOf, metadataUrlOf, resourceMetadataParam } from '../../../api/decision/resource-metadata.js';
import type { App } from '../../../api/types.js';

describe('protected resource metadata', function () {
  it('the well-known string goes between the host and the path; a lone slash is dropped (§3.1)', function () {
    expect(metadataPathOf('https://notes.example')).to.equal('/.well-known/oauth-protected-resource');
    expect(metadataPathOf('https://notes.example/')).to.equal('/.well-known/oauth-protected-resource');
    expect(metadataPathOf('https://notes.example/mcp')).to.equal('/.well-known/oauth-protected-resource/mcp');
    expect(metadataPathOf('https://notes.example/a/b/')).to.equal('/.well-known/oauth-protected-resource/a/b/');
    expect(metadataPathOf('https://notes.example:8443/mcp')).to.equal('/.well-known/oauth-protected-resource/mcp');
  });

  it('a resource that is no http(s) URL without query, fragment and user has no document', function () {
    for (const resource of [
      'urn:notes',
      'notes',
      'ftp://notes.example/x',
      'https://notes.example/x?a=1',
      'https://notes.example/x#',
      'https://u:p@notes.example/',
    ]) {
      expect(metadataPathOf(resource), resource).to.equal(undefined);
    }
  });

  it("a challenge names the document at the client's origin when it is a plain origin, else at the App's first url", function () {
    const app: Pick<App, 'audience' | 'urls'> = { urls: ['https://notes.example'], audience: 'https://notes.example/mcp' };
    expect(metadataUrlOf(app, 'https://notes.example:8443')).to.equal(
      'https://notes.example:8443/.well-known/oauth-protected-resource/mcp',
    );
    expect(metadataUrlOf(app, 'http://[::1]:8080')).to.equal('http://[::1]:8080/.well-known/oauth-protected-resource/mcp');
    for (const origin of ['https://evil"x', 'javascript://x', 'https://a/b', 'https://a b', 'https://a\\b', 'https://a\r\nX: y']) {
      expect(metadataUrlOf(app, origin), origin).to.equal('https://notes.example/.well-known/oauth-protected-resource/mcp');
    }
    expect(metadataUrlOf({ urls: ['https://notes.example'], audience: 'urn:notes' }, 'https://notes.example')).to.equal(undefined);
    expect(resourceMetadataParam('https://a/"\\')).to.equal('resource_metadata="https://a/\\"\\\\"');
  });

  it('the document: the audience exactly, the box, the scopes when there are any, its name', function () {
    const app: App = { resourceType: 'App', id: 'notes', urls: ['https://notes.example'], audience: 'https://notes.example/mcp' };
    expect(appMetadata(app, 'https://box.example', [])).to.deep.equal({
      resource: 'https://notes.example/mcp',
      authorization_servers: ['https://box.example'],
      bearer_methods_supported: ['header'],
      resource_name: 'notes',
      dpop_signing_alg_values_supported: ['ES256', 'ES384', 'ES512', 'PS256', 'RS256', 'EdDSA'],
    });
    expect(appMetadata({ ...app, description: 'Notes' }, 'https://box.example', ['a', 'b'])).to.include({ resource_name: 'Notes' });
    expect(appMetadata(app, 'https://box.example', ['a']).scopes_supported).to.deep.equal(['a']);
  });
});
