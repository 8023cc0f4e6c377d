// Certificates for tests of HTTPS: a CA of the test's own (openssl, Debian's) and
// server certificates it signs, for 127.0.0.1 and localhost (or the names a test gives).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { Agent } from 'undici';

export interface TestCa {
  dir: string;
  /** The CA certificate (PEM), for clients to trust. */
  pem: string;
  caFile: string;
  /**
   * Issues a server certificate (and key) into `<name>.crt` / `<name>.key`, for `altNames` (openssl's
   * subjectAltName syntax; 127.0.0.1 and localhost by default).
   */
  issue(name: string, subject?: string, altNames?: string, usage?: 'serverAuth' | 'clientAuth'): { certFile: string; keyFile: string };
  /** A fetch dispatcher that trusts this CA. */
  dispatcher: Agent;
}

const openssl = (args: string[], cwd: string): void => {
  execFileSync('openssl', args, { cwd, stdio: 'pipe' });
};

/** openssl req's options for a new, unencrypted P-256 key. */
const NEW_P256_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

export function testCa(dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-tls-'))): TestCa {
  openssl(
    [
      'req',
      '-x509',
      ...NEW_P256_KEY,
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '2',
      '-subj',
      '/CN=boxauth test CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
    ],
    dir,
  );
  const pem = fs.readFileSync(path.join(dir, 'ca.crt'), 'utf8');
  return {
    dir,
    pem,
    caFile: path.join(dir, 'ca.crt'),
    dispatcher: new Agent({ connect: { ca: pem } }),
    issue(name, subject = '/CN=127.0.0.1', altNames = 'IP:127.0.0.1,DNS:localhost', usage = 'serverAuth') {
      fs.writeFileSync(path.join(dir, `${name}.ext`), `subjectAltName=${altNames}\nextendedKeyUsage=${usage}\n`);
      openssl(['req', ...NEW_P256_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
      openssl(
        [
          'x509',
          '-req',
          '-in',
          `${name}.csr`,
          '-CA',
          'ca.crt',
          '-CAkey',
          'ca.key',
          '-CAcreateserial',
          '-out',
          `${name}.crt`,
          '-days',
          '2',
          '-extfile',
          `${name}.ext`,
        ],
        dir,
      );
      return { certFile: path.join(dir, `${name}.crt`), keyFile: path.join(dir, `${name}.key`) };
    },
  };
}

/** The subject CN of the certificate a server on 127.0.0.1 presents now, verified against `ca`. */
export function presentedName(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => {
      const cn = socket.getPeerCertificate().subject.CN;
      socket.end();
      resolve(Array.isArray(cn) ? cn.join(',') : (cn ?? ''));
    });
    socket.on('error', reject);
  });
}

/** A self-signed client certificate (RFC 8705 §2.2) and its key, into `<name>.crt` / `<name>.key` of `dir`. */
export function selfSignedClient(dir: string, name: string, subject = `/CN=${name}`): { certFile: string; keyFile: string } {
  openssl(['req', '-x509', ...NEW_P256_KEY, '-keyout', `${name}.key`, '-out', `${name}.crt`, '-days', '2', '-subj', subject], dir);
  return { certFile: path.join(dir, `${name}.crt`), keyFile: path.join(dir, `${name}.key`) };
}
