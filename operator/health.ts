// The operator's probe and metrics endpoints: GET /healthz (the process and its
// event loop are alive), GET /readyz (a standby waiting for the Lease, or a
// leader whose informers have synced; not while shutting down), GET /metrics.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { listenOn } from '../api/public.js';
import type { OperatorMetrics } from './metrics.js';

export interface HealthState {
  ready(): { ok: boolean; detail: string };
}

export async function startHealthServer(
  port: number,
  host: string,
  metrics: OperatorMetrics,
  state: HealthState,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n');
    if (path === '/healthz') return send(200, 'ok\n');
    if (path === '/readyz') {
      const { ok, detail } = state.ready();
      return send(ok ? 200 : 503, `${detail}\n`);
    }
    if (path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => send(200, text, metrics.registry.contentType),
        () => send(500, 'metrics failed\n'),
      );
      return;
    }
    send(404, 'not found\n');
  });
  server.keepAliveTimeout = 5_000;
  await listenOn(server, port, host, 'BOXAUTH_OPERATOR_HEALTH_PORT', 'BOXAUTH_OPERATOR_HEALTH_HOST');
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
