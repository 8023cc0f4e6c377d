import { expect } from 'chai';
import { preferredMediaType } from '../../../api/http/negotiation.js';

describe('preferredMediaType (Accept, RFC 9110 §12.5.1)', function () {
  const offered = ['application/json', 'text/html'];

  it('takes the first offered with no header, and none when the header takes none', function () {
    expect(preferredMediaType(undefined, offered)).to.equal('application/json');
    expect(preferredMediaType('image/png', offered)).to.equal(false);
    expect(preferredMediaType('', offered)).to.equal(false);
  });

  it("takes a browser's navigation as HTML, a program's */* as JSON", function () {
    const chromium = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
    expect(preferredMediaType(chromium, offered)).to.equal('text/html');
    expect(preferredMediaType('*/*', offered)).to.equal('application/json');
    expect(preferredMediaType('application/json, text/plain, */*', offered)).to.equal('application/json');
  });

  it('weighs by q, then by the most specific range, then by the order in the header', function () {
    expect(preferredMediaType('application/json;q=0.5, text/html', offered)).to.equal('text/html');
    // The specific range overrides the wildcard, even a heavier one: text/html is refused.
    expect(preferredMediaType('text/*, text/html;q=0', offered)).to.equal(false);
    expect(preferredMediaType('text/html, application/json', offered)).to.equal('text/html');
    expect(preferredMediaType('application/yaml', ['application/json', 'application/yaml', 'text/yaml'])).to.equal('application/yaml');
    expect(preferredMediaType('text/*', ['application/json', 'application/yaml', 'text/yaml'])).to.equal('text/yaml');
  });

  it('leaves out what it cannot read', function () {
    expect(preferredMediaType('nonsense, text/html;q=2, application/json;q=0.1', offered)).to.equal('application/json');
    expect(preferredMediaType('TEXT/HTML', offered)).to.equal('text/html');
  });
});
