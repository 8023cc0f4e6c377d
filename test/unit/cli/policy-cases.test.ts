import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CliError } from '../../../api/cli/api.js';
import { readCases } from '../../../api/cli/policy-cases.js';
import { readManifestDir } from '../../../api/cli/policy-sources.js';

/** The refusal of a case file: exit 2, and its message. */
function refusal(read: () => unknown): string {
  try {
    read();
  } catch (err) {
    expect(err).to.be.an.instanceOf(CliError);
    expect((err as CliError).exitCode).to.equal(2);
    return (err as CliError).message;
  }
  throw new Error('read without a refusal');
}

const refused = (text: string): string => refusal(() => readCases(text, 'cases.yaml'));

describe('policy test: the case file', function () {
  it('reads each kind of question, with what the box fills in when a case does not say', function () {
    const [api, app, authzen, exchange] = readCases(
      `cases:
  - name: api
    api:
      client: ci
      user: { id: 7, groups: [admins, { id: 3, name: ops }] }
      request: { request-method: GET, uri: /Client/x }
    expect: allow
    allowedBy: ci-allow
  - name: app
    app: { app: wiki, request: { path: /a?b=1, headers: { X-Space: team } } }
    expect: deny
  - name: authzen
    authzen:
      app: wiki
      subject: { type: client, id: pep }
      action: { name: can_read }
      resource: { type: page, id: "1" }
    expect: deny
  - name: exchange
    exchange:
      client: gw
      exchange: { subject: { kind: box, iss: https://b, sub: "7" }, audience: https://s }
    expect: allow
`,
      'cases.yaml',
    );
    expect(api).to.deep.include({ name: 'api', at: 'cases.yaml:2:5', expect: { allow: true, allowedBy: 'ci-allow' } });
    expect(api!.question).to.deep.equal({
      kind: 'api',
      client: 'ci',
      user: {
        id: '7',
        email: '',
        email_verified: false,
        groups: [
          { id: '', name: 'admins' },
          { id: '3', name: 'ops' },
        ],
        more: {},
      },
      scope: null,
      request: { 'request-method': 'get', uri: '/Client/x', params: {}, 'query-string': '' },
    });
    expect(app!.question).to.deep.include({ client: null, user: null, acr: null, amr: null });
    expect((app!.question as { request: unknown }).request).to.deep.equal({
      method: 'GET',
      host: undefined,
      path: '/a?b=1',
      headers: { 'x-space': 'team' },
      rpc: null,
    });
    expect(authzen!.question).to.deep.include({ kind: 'authzen', user: null, context: undefined });
    expect((exchange!.question as { exchange: unknown }).exchange).to.deep.equal({
      subject: { kind: 'box', iss: 'https://b', sub: '7' },
      actor: null,
      delegation: false,
      audience: 'https://s',
      scope: [],
      requested_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    });
  });

  it("reads an app case's JSON-RPC call: the calls as the gate reads them, or the body, as JSON text", function () {
    const rpcOf = (request: string): unknown => {
      const [c] = readCases(`cases:\n  - name: mcp\n    app: { app: mcp, request: ${request} }\n    expect: deny\n`, 'cases.yaml');
      return (c!.question as { request: { rpc: unknown } }).request.rpc;
    };
    expect(rpcOf('{ method: POST, path: /mcp, jsonrpc: { method: tools/call, tool: search } }')).to.deep.equal({
      calls: [{ method: 'tools/call', tool: 'search' }],
    });
    expect(rpcOf('{ method: POST, path: /mcp, jsonrpc: [{ method: initialize }, { method: ping, tool: null }] }')).to.deep.equal({
      calls: [
        { method: 'initialize', tool: null },
        { method: 'ping', tool: null },
      ],
    });
    expect(rpcOf('{ method: POST, path: /mcp, body: { jsonrpc: "2.0", id: 1, method: ping } }')).to.deep.equal({
      body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    });
    expect(rpcOf(`{ method: POST, path: /mcp, body: '{"id":1}' }`)).to.deep.equal({ body: '{"id":1}' });
    expect(refused('cases:\n  - name: mcp\n    app: { app: mcp, request: { path: /mcp, body: 7 } }\n    expect: deny\n')).to.equal(
      'cases.yaml:3:51: cases[0].app.request.body must be JSON text, a mapping or a list',
    );
    expect(refused('cases:\n  - name: mcp\n    app: { app: mcp, request: { path: /mcp, jsonrpc: [] } }\n    expect: deny\n')).to.equal(
      'cases.yaml:3:54: cases[0].app.request.jsonrpc must name one call or more',
    );
  });

  it('refuses a key the format does not have, naming the file, line, column and path', function () {
    const text = `cases:
  - name: a
    app:
      app: wiki
      request: { method: GET, pathh: /x }
    expect: allow
`;
    expect(refused(text)).to.equal(
      'cases.yaml:5:38: cases[0].app.request.pathh is not a key here (the keys: method, host, path, headers, jsonrpc, body)',
    );
  });

  it('refuses a missing or mistyped value where it is, or where it should be', function () {
    expect(refused('cases:\n  - name: a\n    app: { app: wiki, request: { method: GET } }\n    expect: allow\n')).to.equal(
      'cases.yaml:3:32: cases[0].app.request.path must be a non-empty string',
    );
    expect(refused('cases:\n  - name: a\n    api: { client: c, request: { request-method: get, uri: /x } }\n    expect: yes\n')).to.equal(
      'cases.yaml:4:13: cases[0].expect must be allow or deny',
    );
    expect(
      refused(
        'cases:\n  - name: a\n    api: { client: c, user: { id: "1", groups: admins }, request: { request-method: get, uri: /x } }\n    expect: deny\n',
      ),
    ).to.match(/^cases\.yaml:3:\d+: cases\[0\]\.api\.user\.groups must be a list/);
  });

  it('refuses a case with no question or with two, two cases of one name, and allowedBy with deny', function () {
    expect(refused('cases:\n  - name: a\n    expect: allow\n')).to.equal(
      'cases.yaml:2:5: cases[0] must ask one question: one of api, app, authzen, exchange',
    );
    expect(
      refused(
        'cases:\n  - name: a\n    app: { app: w, request: { path: / } }\n    api: { client: c, request: { request-method: get, uri: / } }\n    expect: allow\n',
      ),
    ).to.match(/must ask one question: .* \(not api and app\)$/);
    const twice =
      'cases:\n  - { name: a, app: { app: w, request: { path: / } }, expect: allow }\n  - { name: a, app: { app: w, request: { path: / } }, expect: deny }\n';
    expect(refused(twice)).to.equal('cases.yaml:3:13: cases[1].name "a" names another case too: give each case its own name');
    expect(refused('cases:\n  - { name: a, app: { app: w, request: { path: / } }, expect: deny, allowedBy: p }\n')).to.match(
      /cases\[0\]\.allowedBy goes with expect: allow$/,
    );
  });

  it('refuses an AuthZEN user subject without the person it names, and a token subject', function () {
    const authzen = (subject: string, user = '') =>
      `cases:\n  - name: a\n    authzen: { app: w, subject: ${subject}, action: { name: r }, resource: { type: t, id: "1" }${user} }\n    expect: deny\n`;
    expect(refused(authzen('{ type: user, id: ann }'))).to.match(/cases\[0\]\.authzen\.user is required with a user subject/);
    expect(refused(authzen('{ type: token, id: eyJ }'))).to.match(/subject\.type token cannot be tested/);
    expect(refused(authzen('{ type: client, id: c }', ', user: { id: "1" }'))).to.match(/authzen\.user is for a user subject/);
  });

  it('refuses what is not a case file: not YAML, no cases, more than one document', function () {
    expect(refused('cases: [\n')).to.match(/^cases\.yaml: /);
    expect(refused('cases: []\n')).to.equal('cases.yaml:1:8: cases must be a list of one case or more');
    expect(refused('tests: []\n')).to.match(/tests is not a key here/);
    expect(refused('cases: []\n---\ncases: []\n')).to.match(/must be one YAML document/);
  });
});

describe('policy test: a directory of manifests', function () {
  let dir: string;
  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-manifests-'));
  });
  afterEach(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads Kubernetes manifests and REST records, below the directory too, and skips other kinds', function () {
    fs.mkdirSync(path.join(dir, 'apps'));
    fs.writeFileSync(
      path.join(dir, 'apps', 'wiki.yaml'),
      `apiVersion: boxauth.io/v1alpha1
kind: App
metadata: { name: wiki }
spec: { urls: [https://wiki.example.com] }
---
apiVersion: v1
kind: Namespace
metadata: { name: team }
---
apiVersion: boxauth.io/v1alpha1
kind: AccessPolicy
metadata: { name: wiki-read }
spec: { app: wiki, engine: matcho, matcho: { request-method: get } }
`,
    );
    fs.writeFileSync(
      path.join(dir, 'box.json'),
      JSON.stringify([
        { resourceType: 'Client', id: 'ci', grant_types: ['client_credentials'], secret: 'never-seen' },
        { resourceType: 'AccessPolicy', id: 'ci-allow', engine: 'allow', link: [{ id: 'ci', resourceType: 'Client' }] },
      ]),
    );
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'not a manifest');
    const skipped: string[] = [];
    const sources = readManifestDir(dir, (what) => skipped.push(what));
    expect(sources.policies.map((p) => p.id)).to.deep.equal(['wiki-read', 'ci-allow']);
    expect(sources.policies.find((p) => p.id === 'wiki-read')).to.deep.include({ resourceType: 'AccessPolicy', app: 'wiki' });
    expect(sources.apps.get('wiki')?.urls).to.deep.equal(['https://wiki.example.com']);
    expect(sources.clients.get('ci')).to.deep.equal({ resourceType: 'Client', id: 'ci', grant_types: ['client_credentials'] });
    expect(skipped).to.deep.equal([`${path.join(dir, 'apps', 'wiki.yaml')}: Namespace team`]);
  });

  it('refuses (exit 2) a policy the box would refuse, naming the file, the line and column of the field', function () {
    const file = path.join(dir, 'p.yaml');
    fs.writeFileSync(
      file,
      `apiVersion: boxauth.io/v1alpha1
kind: AccessPolicy
metadata: { name: ok }
spec: { engine: allow }
---
apiVersion: boxauth.io/v1alpha1
kind: AccessPolicy
metadata: { name: bad }
spec:
  engine: matcho
  matcho: { path: "#(?=x)" }
`,
    );
    expect(refusal(() => readManifestDir(dir, () => undefined))).to.match(
      new RegExp(`^${file}:11:11: AccessPolicy bad: matcho: matcho.path is not a regular expression in RE2 syntax`),
    );
  });

  it('refuses a record of one id twice, and a document that is not a mapping', function () {
    fs.writeFileSync(
      path.join(dir, 'a.yaml'),
      'resourceType: AccessPolicy\nid: p\nengine: allow\n---\nresourceType: AccessPolicy\nid: p\nengine: allow\n',
    );
    expect(refusal(() => readManifestDir(dir, () => undefined))).to.match(/a\.yaml:5:1: AccessPolicy\/p again \(first at .*a\.yaml:1:1\)/);
    fs.writeFileSync(path.join(dir, 'a.yaml'), '- just\n- strings\n');
    expect(refusal(() => readManifestDir(dir, () => undefined))).to.match(/a\.yaml:1:3: not a manifest/);
    expect(refusal(() => readManifestDir(path.join(dir, 'none'), () => undefined))).to.match(/cannot read the manifests in/);
  });
});
