// A static file server for the example app: node examples/browser-app/serve.mjs [port]
// (default $PORT, else 3000); BOX_URL: the box it signs in with (default http://localhost:8080).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const port = Number(process.argv[2] ?? process.env.PORT ?? 3000);
const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css' };

const server = http.createServer((req, res) => {
  const name = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/^\/+/, '') || 'index.html';
  const file = path.join(dir, path.normalize(name));
  if (!file.startsWith(dir) || !types[path.extname(file)] || !fs.existsSync(file)) {
    res.writeHead(404).end('not found');
    return;
  }
  res.writeHead(200, { 'Content-Type': types[path.extname(file)], 'Cache-Control': 'no-store' });
  fs.createReadStream(file).pipe(res);
});
const box = process.env.BOX_URL ?? 'http://localhost:8080';
server.listen(port, '127.0.0.1', () => console.log(`example app: http://localhost:${port}/?box=${encodeURIComponent(box)}`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
