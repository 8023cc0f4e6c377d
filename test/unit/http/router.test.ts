// The box's router (api/http/router.ts) on a real node:http server: which handlers a request meets,
// in which order, what a failing handler leads to, and what the response helpers write. What the
// box's own routes answer is in the integration tests, against a running box.
import { expect } from 'chai';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { ApiError } from '../../../api/errors.js';
import { Router, SERVER_CLASSES, encodeUrl, type ErrorRequestHandler, type Request, type Response } from '../../../api/http/router.js';
import { staticFiles } from '../../../api/http/static-files.js';

/** A server of `router`; what no layer answered is the router's own bare 404 or 500. */
async function serve(router: Router): Promise<{ url: string; close: () => Promise<void> }> {
  const server: http.Server<typeof Request, typeof Response> = http.createServer(SERVER_CLASSES, router.listener());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('the router', function () {
  const seen: string[] = [];
  let url: string;
  let close: () => Promise<void>;

  before(async function () {
    const router = new Router();
    router.use((req, _res, next) => {
      seen.push(`log ${req.path}`);
      next();
    });
    router.get('/users/:id/sessions/:sid', (req, res) => {
      // Typed from the path: both are strings, percent-decoded.
      const { id, sid } = req.params;
      res.json({ id, sid, route: req.route?.path });
    });
    router.get('/users/me', (_req, res) => void res.send('me'));
    router.get('/host', (req, res) => void res.json({ host: req.headers.host, url: req.url }));
    router.get('/users/:id', (req, res) => void res.json({ id: req.params.id, query: req.query }));
    router.post('/users', (_req, res) => void res.status(201).location('/users/a b').json({}));
    router.get('/fail/sync', () => {
      throw new ApiError(409, 'conflict', 'sync');
    });
    router.get('/fail/async', async () => {
      await Promise.resolve();
      throw new ApiError(410, 'gone', 'async');
    });
    router.get('/fail/next', (_req, _res, next) => next(new ApiError(418, 'teapot', 'next')));
    router.get(/^\/re\/(\d+)$/, (req, res) => void res.json(req.params));
    router.get(['/a', '/b'], (req, res) => void res.send(req.path));
    router.get('/redirect', (_req, res) => res.redirect(303, '/somewhere?x=é'));
    router.get('/chain', (_req, res, next) => {
      res.set('X-First', '1');
      next();
    });
    router.get('/chain', (_req, res) => void res.type('application/samlmetadata+xml').send('<x/>'));
    router.use('/files', (req, res, next) => (req.path === '/files/one' ? res.send('one') : next()));
    router.use(() => {
      throw new ApiError(404, 'not_found', 'no such endpoint');
    });
    const errors: ErrorRequestHandler = (err, req, res, _next) => {
      seen.push(`error ${req.path}`);
      const status = err instanceof ApiError ? err.status : 500;
      res.status(status).json({ error: err instanceof ApiError ? err.code : 'server_error' });
    };
    router.use(errors);
    ({ url, close } = await serve(router));
  });
  after(async function () {
    await close();
  });

  it('runs middleware, then the first route of the path; a literal route before a pattern of the same path wins', async function () {
    seen.length = 0;
    expect(await (await fetch(`${url}/users/me`)).text()).to.equal('me');
    expect(await (await fetch(`${url}/users/x%2Fy?a=1&a=2&b=`)).json()).to.deep.equal({ id: 'x/y', query: { a: ['1', '2'], b: '' } });
    expect(await (await fetch(`${url}/users/u1/sessions/s%201`)).json()).to.deep.equal({
      id: 'u1',
      sid: 's 1',
      route: '/users/:id/sessions/:sid',
    });
    expect(seen).to.deep.equal(['log /users/me', 'log /users/x%2Fy', 'log /users/u1/sessions/s%201']);
  });

  it('routes a request target in absolute form by its path, with the Host it names (RFC 9112 §3.2.2)', async function () {
    const sent = (target: string): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        const { hostname, port } = new URL(url);
        http
          .get({ hostname, port, path: target, headers: { Host: 'header.example' } }, (res) => {
            let body = '';
            res.on('data', (chunk: Buffer) => (body += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode!, body }));
          })
          .on('error', reject);
      });
    expect(JSON.parse((await sent('http://target.example:8080/users/x%2Fy?a=1')).body)).to.deep.equal({ id: 'x/y', query: { a: '1' } });
    expect(JSON.parse((await sent('HTTPS://user@target.example/host?q')).body)).to.deep.equal({ host: 'target.example', url: '/host?q' });
    expect(JSON.parse((await sent('/host')).body)).to.deep.equal({ host: 'header.example', url: '/host' });
    expect((await sent('http://target.example')).status, 'the root, not routed here').to.equal(404);
  });

  it('matches case-sensitively and strictly: another spelling of a path is not found', async function () {
    for (const path of ['/Users/me', '/users/me/', '//users/me', '/users/', '/users//sessions/s']) {
      const res = await fetch(`${url}${path}`);
      expect(res.status, path).to.equal(404);
      expect(await res.json(), path).to.deep.equal({ error: 'not_found' });
    }
  });

  it('takes a route only for its method; GET answers HEAD without a body', async function () {
    expect((await fetch(`${url}/users/me`, { method: 'DELETE' })).status).to.equal(404);
    const head = await fetch(`${url}/users/me`, { method: 'HEAD' });
    expect(head.status).to.equal(200);
    expect(head.headers.get('content-length')).to.equal('2');
    expect(await head.text()).to.equal('');
    expect(
      new Router()
        .get('/x', () => undefined)
        .post('/x', () => undefined)
        .methodsOf('/x'),
    ).to.deep.equal(['GET', 'POST', 'HEAD']);
  });

  it('sends a throw, a rejection and next(err) to the error handler', async function () {
    for (const [path, status] of [
      ['/fail/sync', 409],
      ['/fail/async', 410],
      ['/fail/next', 418],
    ] as const) {
      seen.length = 0;
      expect((await fetch(`${url}${path}`)).status, path).to.equal(status);
      expect(seen).to.deep.equal([`log ${path}`, `error ${path}`]);
    }
  });

  it('routes regular expressions (groups as params), lists of paths, prefixes, and handlers in a chain', async function () {
    expect(await (await fetch(`${url}/re/42`)).json()).to.deep.equal({ 0: '42' });
    expect(await (await fetch(`${url}/b`)).text()).to.equal('/b');
    expect(await (await fetch(`${url}/files/one`)).text()).to.equal('one');
    expect((await fetch(`${url}/files/two`)).status).to.equal(404);
    expect((await fetch(`${url}/filesx`)).status).to.equal(404);
    const chain = await fetch(`${url}/chain`);
    expect(chain.headers.get('x-first')).to.equal('1');
    // A string body is UTF-8, whatever the type said.
    expect(chain.headers.get('content-type')).to.equal('application/samlmetadata+xml; charset=utf-8');
  });

  it('writes JSON, locations and redirects as a client reads them', async function () {
    const created = await fetch(`${url}/users`, { method: 'POST' });
    expect(created.status).to.equal(201);
    expect(created.headers.get('content-type')).to.equal('application/json; charset=utf-8');
    expect(created.headers.get('location')).to.equal('/users/a%20b');
    const redirect = await fetch(`${url}/redirect`, { redirect: 'manual' });
    expect(redirect.status).to.equal(303);
    expect(redirect.headers.get('location')).to.equal('/somewhere?x=%C3%A9');
    expect(encodeUrl('/a%20b/%zz?q=%E2%9C%93')).to.equal('/a%20b/%25zz?q=%E2%9C%93');
  });

  it('answers a bad percent-encoding in a parameter with 400, not a crash', async function () {
    const res = await fetch(`${url}/users/%E0%A4%A`);
    expect(res.status).to.equal(400);
  });

  it('with no error handler, answers what no layer took with a bare 404, and a failure with a bare 500', async function () {
    const bare = new Router().get('/boom', () => {
      throw new Error('boom');
    });
    const server = await serve(bare);
    try {
      expect((await fetch(`${server.url}/nothing`)).status).to.equal(404);
      const boom = await fetch(`${server.url}/boom`);
      expect(boom.status).to.equal(500);
      expect(await boom.text()).to.equal('');
    } finally {
      await server.close();
    }
  });

  it("res.gone: aborted when the client hangs up before its answer, on a server made with the router's classes or without", async function () {
    let hungUp: (aborted: boolean) => void = () => undefined;
    const told = (): Promise<boolean> => new Promise<boolean>((resolve) => (hungUp = resolve));
    const router = new Router()
      .get('/answered', (_req, res) => {
        const { gone } = res;
        res.once('close', () => setImmediate(() => hungUp(gone.aborted)));
        res.send('here');
      })
      .get('/left', (_req, res) => {
        const { gone } = res;
        gone.addEventListener('abort', () => hungUp(true));
      });
    for (const server of [http.createServer(SERVER_CLASSES, router.listener()), http.createServer(router.listener())]) {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const at = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      try {
        // Answered whole: never aborted.
        const answered = told();
        expect(await (await fetch(`${at}/answered`)).text()).to.equal('here');
        expect(await answered).to.equal(false);
        const aborted = told();
        const leaving = new AbortController();
        const asked = fetch(`${at}/left`, { signal: leaving.signal }).catch(() => 'hung up');
        await new Promise((resolve) => setTimeout(resolve, 50));
        leaving.abort();
        expect(await asked).to.equal('hung up');
        expect(await aborted).to.equal(true);
      } finally {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      }
    }
  });
});

describe('static files', function () {
  let folder: string;
  let server: { url: string; close: () => Promise<void> };

  before(async function () {
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'static-'));
    fs.mkdirSync(path.join(folder, 'guides'));
    fs.writeFileSync(path.join(folder, 'guides', 'scim.md'), '# SCIM\n');
    fs.writeFileSync(path.join(folder, '.hidden'), 'secret');
    fs.writeFileSync(path.join(path.dirname(folder), `outside-${path.basename(folder)}`), 'outside');
    const router = new Router().use('/docs', staticFiles('/docs', folder, 3600));
    router.use((_req, res) => void res.status(404).send('not found'));
    server = await serve(router);
  });
  after(async function () {
    await server.close();
    fs.rmSync(folder, { recursive: true, force: true });
    fs.rmSync(path.join(path.dirname(folder), `outside-${path.basename(folder)}`), { force: true });
  });

  it('serves a file with its type, length and caching; HEAD without the body', async function () {
    const res = await fetch(`${server.url}/docs/guides/scim.md`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('text/markdown; charset=utf-8');
    expect(res.headers.get('cache-control')).to.equal('public, max-age=3600');
    expect(await res.text()).to.equal('# SCIM\n');
    const head = await fetch(`${server.url}/docs/guides/scim.md`, { method: 'HEAD' });
    expect(head.headers.get('content-length')).to.equal('7');
    expect(await head.text()).to.equal('');
  });

  it('finds no folder, dotfile, missing file or path that climbs out, however it is spelled', async function () {
    const outside = `outside-${path.basename(folder)}`;
    for (const p of [
      '/docs',
      '/docs/',
      '/docs/guides',
      '/docs/guides/',
      '/docs/.hidden',
      '/docs/%2ehidden',
      '/docs/nope.md',
      `/docs/..%2f${outside}`,
      `/docs/%2e%2e/${outside}`,
      '/docs/guides//scim.md',
    ]) {
      const res = await fetch(`${server.url}${p}`);
      expect(res.status, p).to.equal(404);
      expect(await res.text(), p).to.equal('not found');
    }
    expect((await fetch(`${server.url}/docs/guides/scim.md`, { method: 'POST' })).status).to.equal(404);
  });
});
