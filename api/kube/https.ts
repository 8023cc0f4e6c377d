// JSON over HTTPS with an optional private CA and bearer token: the box's calls to
// Kubernetes API servers and to workload token issuers. Short timeouts: these
// calls sit on the token path (rarely: answers are cached).
import fs from 'node:fs';
import https from 'node:https';
import type { KubeAccess } from '../config.js';

export interface JsonRequest {
  method?: 'GET' | 'POST';
  body?: unknown;
  ca?: string;
  token?: string;
  timeoutMs?: number;
}

export class HttpsError extends Error {}

export function requestJson<T>(url: string, req: JsonRequest = {}): Promise<T> {
  return new Promise((resolve, reject) => {
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
    const r = https.request(
      url,
      {
        method: req.method ?? 'GET',
        ...(req.ca ? { ca: req.ca } : {}),
        headers: {
          // JWKS endpoints answer application/jwk-set+json (the API server refuses a plain application/json).
          Accept: 'application/json, application/jwk-set+json',
          ...(payload ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {}),
          ...(req.token ? { Authorization: `Bearer ${req.token}` } : {}),
        },
        timeout: req.timeoutMs ?? 5000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > 1024 * 1024) r.destroy(new HttpsError(`${url}: answer larger than 1 MiB`));
          else chunks.push(c);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if ((res.statusCode ?? 500) >= 300) return reject(new HttpsError(`${url} answered ${res.statusCode}`));
          try {
            resolve(JSON.parse(text) as T);
          } catch {
            reject(new HttpsError(`${url} did not answer JSON`));
          }
        });
      },
    );
    r.on('timeout', () => r.destroy(new HttpsError(`${url} did not answer within ${req.timeoutMs ?? 5000} ms`)));
    r.on('error', (err) => reject(err instanceof HttpsError ? err : new HttpsError(`${url}: ${err.message}`)));
    r.end(payload);
  });
}

/** The pod's credentials for its own cluster's API server (the token is re-read: the kubelet rotates it). */
export function kubeCredentials(kube: KubeAccess): { url: string; token: string; ca: string } | undefined {
  if (!kube.apiUrl) return undefined;
  try {
    return {
      url: kube.apiUrl.replace(/\/+$/, ''),
      token: fs.readFileSync(kube.tokenFile, 'utf8').trim(),
      ca: fs.readFileSync(kube.caFile, 'utf8'),
    };
  } catch {
    return undefined;
  }
}
