// HTTPS when asked (BOXAUTH_TLS_CERT_FILE and BOXAUTH_TLS_KEY_FILE): the files
// are read at start and again whenever they change, so a certificate renewed in
// place (cert-manager rewriting a mounted Secret, which Kubernetes swaps through a
// symlink) is served from the next connection on, without a restart. A pair that
// does not load is logged and the one in use is kept.
import fs from 'node:fs';
import https from 'node:https';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import tls from 'node:tls';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { SERVER_CLASSES } from './router.js';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/**
 * What the box's TLS offers, whatever its clients: TLS 1.2 and 1.3 only, and in TLS 1.2 only the
 * cipher suites BCP 195 recommends. FAPI 2.0 §5.2.1: "When using TLS 1.2, servers shall only permit
 * the cipher suites recommended in [BCP195]"; BCP 195 (RFC 9325 §4.2): "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
 * TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
 * TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" (its §4.1 sets the DHE suites of RFC 7525 aside). Every
 * box, not only one with FAPI clients: what it refuses (CBC, SHA-1 MACs, RSA key exchange, DHE) no
 * current client needs. TLS 1.3's own suites, all AEAD, are kept.
 */
export const TLS_POLICY = {
  minVersion: 'TLSv1.2',
  ciphers: [
    'TLS_AES_128_GCM_SHA256',
    'TLS_AES_256_GCM_SHA384',
    'TLS_CHACHA20_POLY1305_SHA256',
    'ECDHE-ECDSA-AES128-GCM-SHA256',
    'ECDHE-RSA-AES128-GCM-SHA256',
    'ECDHE-ECDSA-AES256-GCM-SHA384',
    'ECDHE-RSA-AES256-GCM-SHA384',
  ].join(':'),
  honorCipherOrder: true,
} as const satisfies tls.SecureContextOptions & tls.TlsOptions;

/** How often the files are looked at: stat polling follows symlink swaps, which fs.watch loses. */
const CHECK_EVERY_MS = 1000;

/**
 * Throws unless the certificate (chain) and key load as a pair: a key that does
 * not match, or something that is not PEM. The operator asks the same of a
 * Box's TLS Secret before its pods are given it.
 */
export function checkPair(pair: { cert: string | Buffer; key: string | Buffer }): void {
  tls.createSecureContext(pair);
}

function read(files: TlsFiles): { cert: Buffer; key: Buffer } & typeof TLS_POLICY {
  const pair = { cert: fs.readFileSync(files.certFile), key: fs.readFileSync(files.keyFile) };
  checkPair(pair);
  // The policy goes with every context, the reloaded ones too (setSecureContext replaces the whole context).
  return { ...pair, ...TLS_POLICY };
}

/** An HTTPS server for `listener` that reloads its certificate when the files change; `stop` ends the watching. */
export function httpsServer(
  files: TlsFiles,
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  log: Logger,
  clients: { requestCert: boolean } = { requestCert: false },
): { server: Server; stopWatching: () => void } {
  // Mutual TLS (RFC 8705): asked for, never required (rejectUnauthorized false), so that a browser or a
  // client without one is served as before; whether a certificate authenticates a client is judged
  // per request (api/oauth/client-certificate.ts), against the CAs of BOXAUTH_CLIENT_CA_FILE.
  const server = https.createServer(
    { ...SERVER_CLASSES, ...read(files), ...(clients.requestCert ? { requestCert: true, rejectUnauthorized: false } : {}) },
    listener,
  );
  const reload = (): void => {
    try {
      server.setSecureContext(read(files));
      log.info({ cert: files.certFile }, 'TLS certificate reloaded');
    } catch (err) {
      log.warn(
        { cert: files.certFile, err: errorMessage(err) },
        'TLS certificate files changed but do not load; serving the previous pair',
      );
    }
  };
  const changed = (now: fs.Stats, before: fs.Stats): void => {
    if (now.mtimeMs !== before.mtimeMs || now.ino !== before.ino || now.size !== before.size) reload();
  };
  for (const file of [files.certFile, files.keyFile]) fs.watchFile(file, { interval: CHECK_EVERY_MS, persistent: false }, changed);
  return {
    server,
    stopWatching: () => {
      for (const file of [files.certFile, files.keyFile]) fs.unwatchFile(file, changed);
    },
  };
}
