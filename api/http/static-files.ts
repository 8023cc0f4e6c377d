// Files served as they are (the pages' stylesheet and scripts, the documentation of this release),
// from one folder, for GET and HEAD. A path that is not a plain file under the folder (a folder, a
// dotfile, a segment that climbs out, a file that is not there) is not found: the handler passes the
// request on, so the route after it answers 404 as the box does for any path.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join, sep } from 'node:path';
import type { RequestHandler, Response } from './router.js';

/** The media types of the files the box serves; anything else is bytes. */
const TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.yaml': 'text/yaml; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

export const typeOfFile = (file: string): string => TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream';

/** Sends one file with its type, length and `maxAgeSeconds` of caching; `onError` if it is not a file that can be read. */
export function sendFile(res: Response, file: string, maxAgeSeconds: number, onError: (err: unknown) => void): void {
  stat(file).then((found) => {
    if (!found.isFile()) return onError(new Error(`${file} is not a file`));
    res.writeHead(200, {
      'Content-Type': typeOfFile(file),
      'Content-Length': found.size,
      'Cache-Control': `public, max-age=${maxAgeSeconds}`,
      'Last-Modified': found.mtime.toUTCString(),
    });
    if (res.req.method === 'HEAD') return void res.end();
    createReadStream(file)
      .on('error', (err) => res.destroy(err))
      .pipe(res);
  }, onError);
}

/** A handler for `router.use(mount, staticFiles(mount, folder))`: the files under `folder`. */
export function staticFiles(mount: string, folder: string, maxAgeSeconds: number): RequestHandler {
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const segments = req.path.slice(mount.length).split('/').slice(1);
    let names: string[];
    try {
      names = segments.map((s) => decodeURIComponent(s));
    } catch {
      return next();
    }
    if (names.length === 0 || names.some((name) => name === '' || name.startsWith('.') || name.includes(sep) || name.includes('/')))
      return next();
    sendFile(res, join(folder, ...names), maxAgeSeconds, () => next());
  };
}
