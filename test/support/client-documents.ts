// An agent vendor's web server, for the tests of Client ID Metadata Documents: HTTPS on 127.0.0.1
// with a certificate of the test's CA (test/support/tls.ts; the box trusts it through
// NODE_EXTRA_CA_CERTS), serving what each path is set to answer — a document, a redirect, a
// huge or a slow answer — and counting the requests each path got, so a test can say the box
// never asked. The same routes answer over plain HTTP too, on a port of their own.
import http from 'node:http';
import https from 'node:https';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { TestCa } from './tls.js';

export interface Answer {
  status?: number;
  headers?: Record<string, string>;
  /** JSON to answer (serialized), or a string as it is. */
  body?: unknown;
  /** Milliseconds to wait before answering. */
  delayMs?: number;
  /** Bytes to send in chunks without a Content-Length (a huge answer streamed). */
  streamBytes?: number;
}

export interface ClientDocuments {
  /** https://127.0.0.1:<port> */
  origin: string;
  /** http://127.0.0.1:<port>: the same routes without TLS. */
  plainOrigin: string;
  /** Sets what `path` answers. */
  serve(path: string, answer: Answer): void;
  /** The requests `path` got, over either scheme. */
  hits(path: string): number;
  close(): Promise<void>;
}

export async function clientDocuments(ca: TestCa): Promise<ClientDocuments> {
  const routes = new Map<string, Answer>();
  const hits = new Map<string, number>();
  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const answer = routes.get(path);
    if (!answer) return void res.writeHead(404).end();
    const send = (): void => {
      if (answer.streamBytes) {
        res.writeHead(answer.status ?? 200, { 'Content-Type': 'application/json', ...answer.headers });
        const chunk = Buffer.alloc(1024, ' ');
        res.write('{"padding":"');
        for (let sent = 0; sent < answer.streamBytes && !res.destroyed; sent += chunk.length) res.write(chunk);
        return void res.end('"}');
      }
      const body = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? {});
      res.writeHead(answer.status ?? 200, { 'Content-Type': 'application/json', ...answer.headers }).end(body);
    };
    if (answer.delayMs) setTimeout(send, answer.delayMs);
    else send();
  };
  const { certFile, keyFile } = ca.issue('client-documents');
  const secure = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, handler);
  const plain = http.createServer(handler);
  // A refused fetch ends its connection mid-answer: that is the box's doing, not the server's error.
  for (const server of [secure, plain]) server.on('clientError', (_err, socket) => socket.destroy());
  await Promise.all([secure, plain].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
  return {
    origin: `https://127.0.0.1:${(secure.address() as AddressInfo).port}`,
    plainOrigin: `http://127.0.0.1:${(plain.address() as AddressInfo).port}`,
    serve: (path, answer) => void routes.set(path, answer),
    hits: (path) => hits.get(path) ?? 0,
    close: async () => {
      for (const s of [secure, plain]) s.closeAllConnections();
      await Promise.all([secure, plain].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}
