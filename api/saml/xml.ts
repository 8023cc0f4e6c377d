// Reading a SAML document that came from outside: the one way in for every SAML message and
// metadata the box reads. Before any signature is looked at, the text is capped, refused if it
// declares a DTD or entities or holds a processing instruction (XXE and billion laughs die here,
// before a parser sees them), parsed with every xmldom complaint thrown, and validated against
// the OASIS schemas vendored in api/saml/xsd/ (libxml2 compiled to WebAssembly, libxml2-wasm). What comes out is a plain xmldom Document: it is not trusted yet — only what
// verify.ts returns from a signature is.
import fs from 'node:fs';
import { projectPath } from '../paths.js';
import { xmldomLibrary } from './xml-libraries.js';

/** Why a SAML document was refused: a short sentence that never quotes the document. */
export class SamlRefusal extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'SamlRefusal';
  }
}

export const SAML_NS = {
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  metadata: 'urn:oasis:names:tc:SAML:2.0:metadata',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
  xenc: 'http://www.w3.org/2001/04/xmlenc#',
  xenc11: 'http://www.w3.org/2009/xmlenc11#',
} as const;

export type SamlSchema = 'protocol' | 'metadata';

/** The largest document read: a Response with a few signed assertions is far below, a federation's metadata is not read here. */
const SIZE_CAP: Record<SamlSchema, number> = { protocol: 256 * 1024, metadata: 1024 * 1024 };

/**
 * The most elements and attributes (namespace declarations included) a document may hold: one per
 * 32 bytes of the size cap. A real SAML document has one per 40 bytes or more (a Response of
 * 1,400 group values: one per 42); one per 6 bytes (`<x:b/>` repeated in Extensions) only makes
 * the verifier pay, since xml-crypto searches every attribute of every element for the signed ID
 * several times, on the event loop (1.6 s for 40,000 empty elements).
 */
const NODE_CAP: Record<SamlSchema, number> = { protocol: SIZE_CAP.protocol / 32, metadata: SIZE_CAP.metadata / 32 };

const XSD_DIR = projectPath('api', 'saml', 'xsd');

/**
 * The OASIS and W3C schemas as published. They import one another by their web addresses
 * (http://www.w3.org/TR/…), which libxml2 would try to fetch; each entry point below imports
 * every namespace from its local file first, and libxml2 then skips the later imports of a
 * namespace already imported ("Skipping import of schema located at …"), so nothing is fetched
 * and the files stay the published texts (their `<!DOCTYPE schema … [<!ENTITY …>]>` included:
 * libxml2 reads the schemas itself, they never pass through readSamlXml's refusal).
 */
const XSD_FILES = {
  xml: 'xml.xsd',
  dsig: 'xmldsig-core-schema.xsd',
  xenc: 'xenc-schema.xsd',
  // XML Encryption 1.1's elements (xenc11:MGF inside an EncryptedKey's EncryptionMethod, as
  // Keycloak writes by default): the 2002 schema lets them in only through a strict `any`.
  xenc11: 'xenc-schema-11.xsd',
  assertion: 'saml-schema-assertion-2.0.xsd',
  protocol: 'saml-schema-protocol-2.0.xsd',
  metadata: 'saml-schema-metadata-2.0.xsd',
} as const;

const XML_NS = 'http://www.w3.org/XML/1998/namespace';

/** Where libxml2 finds the vendored files: a scheme of our own, served from memory by the provider below. */
const VENDORED = 'boxauth-xsd:/';

function entryPoint(imports: [namespace: string, file: string][]): string {
  const lines = imports.map(([ns, file]) => `  <xs:import namespace="${ns}" schemaLocation="${VENDORED}${file}"/>`);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:boxauth:saml:entry-point">',
    ...lines,
    '</xs:schema>',
  ].join('\n');
}

const ENTRY_POINTS: Record<SamlSchema, string> = {
  protocol: entryPoint([
    [SAML_NS.dsig, XSD_FILES.dsig],
    [SAML_NS.xenc, XSD_FILES.xenc],
    [SAML_NS.xenc11, XSD_FILES.xenc11],
    [SAML_NS.assertion, XSD_FILES.assertion],
    [SAML_NS.protocol, XSD_FILES.protocol],
  ]),
  metadata: entryPoint([
    [XML_NS, XSD_FILES.xml],
    [SAML_NS.dsig, XSD_FILES.dsig],
    [SAML_NS.xenc, XSD_FILES.xenc],
    [SAML_NS.xenc11, XSD_FILES.xenc11],
    [SAML_NS.assertion, XSD_FILES.assertion],
    [SAML_NS.metadata, XSD_FILES.metadata],
  ]),
};

type Libxml2 = typeof import('libxml2-wasm');
type XsdValidator = InstanceType<Libxml2['XsdValidator']>;

/**
 * libxml2's one way to read a file, answered from the vendored schemas and nothing else: a name
 * outside them is not matched, and libxml2-wasm has no file or network access of its own, so a
 * schemaLocation can never reach anything but these files.
 */
function serveVendoredSchemas(libxml2: Libxml2): void {
  const files = new Map<string, Buffer>(
    Object.values(XSD_FILES).map((name) => [`${VENDORED}${name}`, fs.readFileSync(`${XSD_DIR}/${name}`)]),
  );
  const open = new Map<number, { bytes: Buffer; at: number }>();
  let next = 1;
  libxml2.xmlRegisterInputProvider({
    match: (name) => files.has(name),
    open: (name) => {
      const bytes = files.get(name);
      if (!bytes) return undefined;
      open.set(next, { bytes, at: 0 });
      return next++;
    },
    read: (fd, buf) => {
      const file = open.get(fd);
      if (!file) return -1;
      const n = file.bytes.copy(buf, 0, file.at);
      file.at += n;
      return n;
    },
    close: (fd) => open.delete(fd),
  });
}

interface SchemaChecker {
  libxml2: Libxml2;
  validators: Record<SamlSchema, XsdValidator>;
}

let checker: Promise<SchemaChecker> | undefined;

/**
 * libxml2 and the two schemas, loaded at the first SAML document and kept (a box that reads none
 * carries none of its 15 MB): the schemas compile once, in about 30 ms each, and a check is then a
 * tenth of a millisecond for a small message, in line, with nothing to queue.
 */
function schemaChecker(): Promise<SchemaChecker> {
  checker ??= import('libxml2-wasm').then((libxml2) => {
    serveVendoredSchemas(libxml2);
    const compile = (schema: SamlSchema): XsdValidator => {
      const doc = libxml2.XmlDocument.fromString(ENTRY_POINTS[schema], { url: `${VENDORED}entry-point-${schema}.xsd` });
      try {
        return libxml2.XsdValidator.fromDoc(doc);
      } finally {
        doc.dispose();
      }
    };
    return { libxml2, validators: { protocol: compile('protocol'), metadata: compile('metadata') } };
  });
  return checker;
}

/**
 * The most comments a document may hold. A comment carries nothing a signature covers (exclusive
 * c14n without comments drops it), so any number can be added inside a signed Assertion, and
 * xml-crypto removes those of the signed element one by one, in time quadratic in their number
 * (34 s for the 37,000 that fit in 256 KiB). IdPs write none or a few, metadata a few more.
 */
const COMMENT_CAP = 64;

/** The XML declaration, the one processing-instruction-like thing a SAML document may start with. */
const XML_DECLARATION = /^\uFEFF?<\?xml\s[^<>?]*\?>/;

/**
 * `<!` followed by a letter opens a markup declaration (DOCTYPE, ENTITY, ELEMENT, ATTLIST,
 * NOTATION) in any spelling; `<![CDATA[` is not one. `<?` after the declaration is a processing
 * instruction. Both are refused on the text, so no parser ever expands an entity; so are more
 * than COMMENT_CAP comments.
 */
export function refuseDeclarations(xml: string): void {
  const body = xml.replace(XML_DECLARATION, '');
  if (/<![A-Za-z]/.test(body)) throw new SamlRefusal('the document declares a DTD or entities');
  if (body.includes('<?')) throw new SamlRefusal('the document holds a processing instruction');
  // Counted on the text like the rest: `<!--` inside a CDATA section counts too, which only errs towards refusing.
  let comments = 0;
  for (let at = body.indexOf('<!--'); at >= 0 && comments <= COMMENT_CAP; at = body.indexOf('<!--', at + 4)) comments++;
  if (comments > COMMENT_CAP) throw new SamlRefusal('the document holds too many comments');
}

/**
 * Parses XML with every xmldom complaint a refusal. For what readSamlXml already let in, or what
 * a verified signature covered (verify.ts re-parses that); a document from outside goes through
 * readSamlXml.
 */
export function parseXml(xml: string): Document {
  const complain = (): never => {
    throw new SamlRefusal('the document is not well-formed XML');
  };
  const doc = new (xmldomLibrary().DOMParser)({
    errorHandler: { warning: complain, error: complain, fatalError: complain },
  }).parseFromString(xml, 'text/xml');
  if (!doc.documentElement) throw new SamlRefusal('the document is not well-formed XML');
  return doc;
}

async function validate(xml: string, schema: SamlSchema): Promise<void> {
  const { libxml2, validators } = await schemaChecker();
  let doc: InstanceType<Libxml2['XmlDocument']> | undefined;
  try {
    // The text passed refuseDeclarations: no DTD, so no entity and nothing external to load.
    doc = libxml2.XmlDocument.fromString(xml);
    validators[schema].validate(doc);
  } catch (err) {
    if (err instanceof libxml2.XmlLibError) throw new SamlRefusal(`the document does not follow the SAML ${schema} schema`);
    throw err;
  } finally {
    doc?.dispose(); // libxml2's memory is WebAssembly's, which no garbage collector frees
  }
}

/**
 * The start tags of the text, counted before any parser runs: xmldom takes about 300 ms to build a
 * document of 256 KiB of empty elements, which anyone may post, only for the count after it to
 * refuse it. Comments and CDATA sections are left out (a `<` inside them starts no element), so the
 * count never exceeds a well-formed document's elements: nothing the count after would let in is
 * refused here.
 */
function refuseTooManyStartTags(xml: string, cap: number): void {
  const markup = xml.replace(/<!--[\s\S]*?-->|<!\[CDATA\[[\s\S]*?\]\]>/g, '');
  let tags = 0;
  for (const _ of markup.matchAll(/<[^/!?]/g))
    if (++tags > cap) throw new SamlRefusal('the document holds too many elements and attributes');
}

function refuseTooManyNodes(doc: Document, cap: number): void {
  const elements = doc.getElementsByTagName('*');
  let nodes = elements.length;
  for (let i = 0; i < elements.length && nodes <= cap; i++) nodes += elements.item(i)?.attributes.length ?? 0;
  if (nodes > cap) throw new SamlRefusal('the document holds too many elements and attributes');
}

/**
 * Reads a SAML message (`protocol`: samlp with saml, ds, xenc and xenc11 inside) or metadata (`metadata`:
 * md) as it arrived. Throws SamlRefusal for a document over the caps (of size, of elements and
 * attributes, of comments), with a DTD, an entity or a processing instruction, that is not
 * well-formed, that the schema refuses, or whose root is not of the schema's namespace (the entry
 * point knows every imported namespace's global elements).
 */
export async function readSamlXml(xml: string, schema: SamlSchema): Promise<Document> {
  const cap = SIZE_CAP[schema];
  if (xml.length > cap || Buffer.byteLength(xml, 'utf8') > cap) throw new SamlRefusal('the document is too large');
  refuseDeclarations(xml);
  refuseTooManyStartTags(xml, NODE_CAP[schema]);
  const doc = parseXml(xml);
  refuseTooManyNodes(doc, NODE_CAP[schema]);
  const rootNs = schema === 'protocol' ? SAML_NS.protocol : SAML_NS.metadata;
  if (doc.documentElement.namespaceURI !== rootNs) throw new SamlRefusal(`the document is not a SAML ${schema} document`);
  await validate(xml, schema);
  return doc;
}

const ELEMENT_NODE = 1;
const TEXT_NODE = 3;

/** Whether `node` is an element of this namespace and local name. */
export function isElementNamed(node: Node, ns: string, localName: string): node is Element {
  return node.nodeType === ELEMENT_NODE && (node as Element).namespaceURI === ns && (node as Element).localName === localName;
}

/** The direct children of `parent` with this namespace and local name, in order: never a search of the whole document. */
export function childElements(parent: Element, ns: string, localName: string): Element[] {
  const found: Element[] = [];
  for (let node = parent.firstChild; node; node = node.nextSibling) {
    if (node.nodeType !== ELEMENT_NODE) continue;
    const element = node as Element;
    if (element.namespaceURI === ns && element.localName === localName) found.push(element);
  }
  return found;
}

/** The one direct child of `parent` with this namespace and local name; none or several is a refusal. */
export function onlyChild(parent: Element, ns: string, localName: string): Element {
  const found = childElements(parent, ns, localName);
  if (found.length !== 1 || !found[0]) throw new SamlRefusal(`expected exactly one ${localName} in ${parent.localName}`);
  return found[0];
}

/**
 * The text of an element that holds text only: a comment, a child element, a CDATA section or a
 * processing instruction inside (`admin@example.com<!---->.evil.com`) is a refusal, so no reader
 * can take a part of a value for the whole. Used for NameID, Issuer, Audience.
 */
export function textOf(el: Element): string {
  let text = '';
  for (let node = el.firstChild; node; node = node.nextSibling) {
    if (node.nodeType !== TEXT_NODE) throw new SamlRefusal(`${el.localName} holds something other than text`);
    text += (node as Text).data;
  }
  return text;
}
