// Where `make bench`'s traced rows export their spans: an OTLP/HTTP endpoint on loopback that
// takes each export, counts it and drops it. The rows measure what tracing costs the box (making,
// batching and sending spans), not what a collector costs: that runs elsewhere in a cluster.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TraceSink {
  /** OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  /** The exports taken so far, and their bytes. */
  received: { exports: number; bytes: number };
  close(): Promise<void>;
}

export async function traceSink(): Promise<TraceSink> {
  const received = { exports: 0, bytes: 0 };
  const server = http.createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (received.bytes += chunk.length));
    req.on('end', () => {
      received.exports++;
      // An empty ExportTraceServiceResponse: every span accepted.
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
