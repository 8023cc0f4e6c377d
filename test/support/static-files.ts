// A static web server on loopback, as a chart repository or an OCI registry's read side is served.
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/** Serves a directory's files read-only on loopback, as a static web server serves a chart repository. */
export async function serveFiles(
  root: string,
  route: (url: string) => string | undefined,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const file = route(new URL(req.url ?? '/', 'http://x').pathname);
    const full = file && path.join(root, path.normalize(`/${file}`));
    if (!full || !fs.statSync(full, { throwIfNoEntry: false })?.isFile()) {
      res.writeHead(404).end();
      return;
    }
    const body = fs.readFileSync(full);
    // An OCI registry answers a manifest with its media type and digest (distribution-spec, "Pulling manifests").
    const headers: Record<string, string | number> = { 'Content-Length': body.length };
    if (req.url?.includes('/manifests/')) {
      headers['Content-Type'] = (JSON.parse(body.toString('utf8')) as { mediaType: string }).mediaType;
      headers['Docker-Content-Digest'] = `sha256:${path.basename(full)}`;
    }
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
