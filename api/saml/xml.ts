// Reading a SAML document that came from outside: the one way in for every SAML message and
// metadata the box reads. Before any signature is looked at, the text is capped, refused if it
// declares a DTD or entities or holds a processing instruction (XXE and billion laughs die here,
// before a parser sees them), parsed with every xmldom complaint thrown, and validated against
// the OASIS schemas vendored in api/saml/xsd/ (libxml2's xmllint compiled to WebAssembly,
// xmllint-wasm). What comes out is a plain xmldom Document: it is not trusted yet — only what
// verify.ts returns from a signature is.
import fs from 'node:fs';
import { DOMParser } from '@xmldom/xmldom';
import { validateXML, type XMLFileInfo } from 'xmllint-wasm';
import { ApiError } from '../errors.js';
import { projectPath } from '../paths.js';

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
 * xmllint reads the schemas itself, they never pass through readSamlXml's refusal).
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

function entryPoint(imports: [namespace: string, file: string][]): string {
  const lines = imports.map(([ns, file]) => `  <xs:import namespace="${ns}" schemaLocation="${file}"/>`);
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

let schemaFiles: XMLFileInfo[] | undefined;

/** The vendored files, read once (xmllint-wasm compiles them again on every call: it runs each in a fresh worker). */
function vendoredSchemas(): XMLFileInfo[] {
  schemaFiles ??= Object.values(XSD_FILES).map((fileName) => ({
    fileName,
    contents: fs.readFileSync(`${XSD_DIR}/${fileName}`, 'utf8'),
  }));
  return schemaFiles;
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
  const doc = new DOMParser({ errorHandler: { warning: complain, error: complain, fatalError: complain } }).parseFromString(
    xml,
    'text/xml',
  );
  if (!doc.documentElement) throw new SamlRefusal('the document is not well-formed XML');
  return doc;
}

/** 503: too many SAML documents are waiting for the schema check already; nothing was read. */
export class SamlBusy extends ApiError {
  constructor() {
    super(503, 'temporarily_unavailable', 'the box is busy reading SAML messages; try again in a moment', { 'Retry-After': '1' });
  }
}

// Each validation is a worker thread with libxml2 in 16 MiB of WebAssembly, compiling the
// schemas again (about 35 ms for the worker, 130 ms more for the SAML schemas): anyone can
// post a SAMLResponse, so a burst must neither start a thread per request nor wait unbounded.
const MAX_VALIDATING = 2;
const MAX_WAITING = 16;
let validating = 0;
const waiting: (() => void)[] = [];

async function withValidationSlot<T>(work: () => Promise<T>): Promise<T> {
  if (validating < MAX_VALIDATING) validating++;
  else {
    if (waiting.length >= MAX_WAITING) throw new SamlBusy();
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
  try {
    return await work();
  } finally {
    // A finished validation hands its slot straight to the next waiter.
    const next = waiting.shift();
    if (next) next();
    else validating--;
  }
}

async function validate(xml: string, schema: SamlSchema): Promise<void> {
  const result = await withValidationSlot(() =>
    validateXML({
      xml: [{ fileName: 'message.xml', contents: xml }],
      schema: [{ fileName: 'entry-point.xsd', contents: ENTRY_POINTS[schema] }],
      preload: vendoredSchemas(),
      // No network, ever: the entry point makes every import local.
      modifyArguments: (args) => ['--nonet', ...args],
    }),
  );
  if (!result.valid) throw new SamlRefusal(`the document does not follow the SAML ${schema} schema`);
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
 * point knows every imported namespace's global elements); SamlBusy (503) when too many documents
 * wait for the schema check.
 */
export async function readSamlXml(xml: string, schema: SamlSchema): Promise<Document> {
  const cap = SIZE_CAP[schema];
  if (xml.length > cap || Buffer.byteLength(xml, 'utf8') > cap) throw new SamlRefusal('the document is too large');
  refuseDeclarations(xml);
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
