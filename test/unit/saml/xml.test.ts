import { expect } from 'chai';
import { SAML_NS, SamlRefusal, childElements, onlyChild, parseXml, readSamlXml } from '../../../api/saml/xml.js';
import { authnRequestXml, responseXml } from '../../support/saml.js';

async function refusalOf(xml: string, schema: 'protocol' | 'metadata' = 'protocol'): Promise<string> {
  try {
    await readSamlXml(xml, schema);
  } catch (err) {
    expect(err).to.be.instanceOf(SamlRefusal);
    return (err as SamlRefusal).reason;
  }
  throw new Error('not refused');
}

const RESPONSE_OPEN =
  '<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="_r" Version="2.0" IssueInstant="2026-11-28T06:00:00Z">';

const METADATA =
  '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://sp.example">' +
  '<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">' +
  '<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://sp.example/acs" index="0"/>' +
  '</md:SPSSODescriptor></md:EntityDescriptor>';

describe('reading SAML XML (xml.ts)', function () {
  it('reads a Response and an AuthnRequest the schema accepts, with or without an XML declaration', async function () {
    const doc = await readSamlXml(`<?xml version="1.0" encoding="UTF-8"?>\n${responseXml()}`, 'protocol');
    expect(doc.documentElement.localName).to.equal('Response');
    expect((await readSamlXml(authnRequestXml(), 'protocol')).documentElement.localName).to.equal('AuthnRequest');
  });

  it('reads metadata against the metadata schema, and not a protocol message as metadata or the reverse', async function () {
    expect((await readSamlXml(METADATA, 'metadata')).documentElement.getAttribute('entityID')).to.equal('https://sp.example');
    expect(await refusalOf(METADATA, 'protocol')).to.equal('the document is not a SAML protocol document');
    expect(await refusalOf(responseXml(), 'metadata')).to.equal('the document is not a SAML metadata document');
  });

  it('refuses what the OASIS schema refuses (a Response without Version; an Assertion in the wrong place)', async function () {
    expect(await refusalOf(responseXml().replace(' Version="2.0"', ''))).to.equal('the document does not follow the SAML protocol schema');
    const misplaced = responseXml().replace(/(<samlp:Status>.*<\/samlp:Status>)(<saml:Assertion.*<\/saml:Assertion>)/, '$2$1');
    expect(misplaced).to.not.equal(responseXml());
    expect(await refusalOf(misplaced)).to.equal('the document does not follow the SAML protocol schema');
  });

  it('refuses an XXE document before parsing, quickly', async function () {
    const xxe = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${RESPONSE_OPEN}<saml:Issuer xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion">&x;</saml:Issuer></samlp:Response>`;
    const started = performance.now();
    expect(await refusalOf(xxe)).to.equal('the document declares a DTD or entities');
    expect(performance.now() - started).to.be.below(50);
  });

  it('refuses a billion-laughs document before parsing, quickly', async function () {
    const entities = ['<!ENTITY lol0 "lol">'];
    for (let i = 1; i <= 9; i++) entities.push(`<!ENTITY lol${i} "${`&lol${i - 1};`.repeat(10)}">`);
    const bomb = `<?xml version="1.0"?><!DOCTYPE samlp:Response [${entities.join('')}]>${RESPONSE_OPEN}&lol9;</samlp:Response>`;
    const started = performance.now();
    expect(await refusalOf(bomb)).to.equal('the document declares a DTD or entities');
    expect(performance.now() - started).to.be.below(50);
  });

  it('refuses a DOCTYPE in any case, a processing instruction, too large a document and one that is not well-formed', async function () {
    expect(await refusalOf(`<!doctype r>${responseXml()}`)).to.equal('the document declares a DTD or entities');
    expect(await refusalOf(`<?xml version="1.0"?><?xml-stylesheet href="x"?>${responseXml()}`)).to.equal(
      'the document holds a processing instruction',
    );
    expect(await refusalOf(responseXml().replace('alice@example.com', 'alice@example.com<?evil x?>'))).to.equal(
      'the document holds a processing instruction',
    );
    expect(await refusalOf(responseXml().replace('<saml:Issuer>', `<saml:Issuer>${' '.repeat(256 * 1024)}`))).to.equal(
      'the document is too large',
    );
    expect(await refusalOf(responseXml().replace('</samlp:Response>', ''))).to.equal('the document is not well-formed XML');
    expect(await refusalOf(responseXml().replace('<saml:Issuer>', '<saml:Issuer a="1" a="2">'))).to.equal(
      'the document is not well-formed XML',
    );
  });

  it('counts start tags before any parser runs; comments and CDATA sections hold none', async function () {
    // Cut short so that it is not well-formed: a parser would say so, after building 20,000 elements.
    const flood = responseXml().replace('</samlp:Response>', `<x:a xmlns:x="urn:example:x">${'<x:b/>'.repeat(20000)}`);
    expect(await refusalOf(flood)).to.equal('the document holds too many elements and attributes');
    // A `<` in a comment or a CDATA section starts no element: the count lets them by, the schema judges the rest.
    const quoted = responseXml().replace('<saml:Issuer>', `<!--${'<x:b/>'.repeat(60)}--><saml:Issuer>`);
    expect((await readSamlXml(quoted, 'protocol')).documentElement.localName).to.equal('Response');
    const cdata = responseXml().replace('</samlp:Response>', `<![CDATA[${'<x:b/>'.repeat(20000)}]]></samlp:Response>`);
    expect(await refusalOf(cdata)).to.equal('the document does not follow the SAML protocol schema');
  });

  it('childElements and onlyChild see direct children only', function () {
    const doc = parseXml(responseXml());
    expect(childElements(doc.documentElement, SAML_NS.assertion, 'Issuer')).to.have.length(1);
    expect(childElements(doc.documentElement, SAML_NS.assertion, 'NameID')).to.have.length(0);
    expect(() => onlyChild(doc.documentElement, SAML_NS.assertion, 'NameID')).to.throw(SamlRefusal);
    expect(onlyChild(doc.documentElement, SAML_NS.assertion, 'Assertion').getAttribute('ID')).to.equal('_assertion');
  });
});
