// A SAML service provider none of us wrote the SAML of: test/py-saml-sp/sp.py, pysaml2 (pinned in
// test/py-client/requirements.txt, in the venv scripts/test-tools-build.sh builds) checking the
// IdP's responses with Debian's xmlsec1. One process per app, on a port of its own.
import { spawn } from 'node:child_process';
import { projectPath } from '../../api/paths.js';
import { stopChild } from './child.js';
import { pyClientPython, requirePyClient } from './py-client.js';

export interface PySamlSp {
  /** http://127.0.0.1:<port>: /login starts a sign-in, /acs takes the Response, /metadata is its metadata. */
  url: string;
  entityId: string;
  metadataUrl: string;
  acsUrl: string;
  /** What it printed on stderr (pysaml2's traceback of a refused Response, its requests). */
  log(): string;
  stop(): Promise<void>;
}

/** Starts an SP that trusts the IdP whose metadata `idpMetadataUrl` serves (read once, at start). */
export async function startPySamlSp(
  idpMetadataUrl: string,
  name: string,
  options: { unsignedRequests?: boolean; postRequests?: boolean; allowUnsolicited?: boolean; singleLogout?: boolean } = {},
): Promise<PySamlSp> {
  requirePyClient();
  const args = [projectPath('test', 'py-saml-sp', 'sp.py'), '--idp-metadata-url', idpMetadataUrl, '--name', name];
  if (options.unsignedRequests) args.push('--unsigned-requests');
  // The AuthnRequest over HTTP-POST (an enveloped signature) instead of HTTP-Redirect.
  if (options.postRequests) args.push('--post-requests');
  // IdP-initiated SSO: a Response that answers no AuthnRequest of this SP.
  if (options.allowUnsolicited) args.push('--allow-unsolicited');
  // A SingleLogoutService of the HTTP-Redirect binding (/slo), its LogoutResponses signed; /session says whether it is signed in.
  if (options.singleLogout) args.push('--single-logout');
  const child = spawn(pyClientPython(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const started = await new Promise<{ url: string; entity_id: string; metadata_url: string; acs_url: string }>((resolve, reject) => {
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      if (stdout.includes('\n')) resolve(JSON.parse(stdout.slice(0, stdout.indexOf('\n'))));
    });
    child.once('exit', (code) => reject(new Error(`test/py-saml-sp/sp.py exited (${code}) before it listened:\n${stderr}`)));
  });
  return {
    url: started.url,
    entityId: started.entity_id,
    metadataUrl: started.metadata_url,
    acsUrl: started.acs_url,
    log: () => stderr,
    stop: () => stopChild(child),
  };
}
