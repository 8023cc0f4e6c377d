// Sign-in in the person's browser (RFC 8252, native apps): the code flow with PKCE,
// state and nonce, whose redirect comes back to a server of this process on
// 127.0.0.1 (the Client registers http://127.0.0.1/callback; the box lets the port
// differ). The browser's tab is answered only once the code became a checked ID
// token, so "Signed in" is true when it shows.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage } from '../../errors.js';
import { s256Challenge } from '../../credentials/pkce.js';
import { html } from '../../ui/html.js';
import { CliError } from '../api.js';
import type { BoxClient, SignedIn } from './box-client.js';
import { openBrowser } from './open-browser.js';

export interface BrowserSignIn {
  scope: string;
  /** 0: any free port. */
  listenPort: number;
  timeoutMs: number;
  /** False: print the address only. */
  openBrowser: boolean;
  env: NodeJS.ProcessEnv;
  err: (text: string) => void;
}

const random = (): string => randomBytes(32).toString('base64url');

function tab(res: http.ServerResponse, status: number, title: string, message: string): void {
  res.writeHead(status, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store', Connection: 'close' });
  res.end(
    `<!doctype html>${
      html`<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>
<body style="font-family: sans-serif; margin: 3em"><h1>${title}</h1><p>${message}</p></body></html>`.text
    }`,
  );
}

async function listen(port: number): Promise<http.Server> {
  const server = http.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(new CliError(`cannot listen on 127.0.0.1:${port} for the sign-in's redirect: ${errorMessage(err)}`, 1, { cause: err })),
    );
    server.listen(port, '127.0.0.1', resolve);
  });
  return server;
}

export async function signInWithBrowser(box: BoxClient, opts: BrowserSignIn): Promise<SignedIn> {
  const [verifier, state, nonce] = [random(), random(), random()];
  const server = await listen(opts.listenPort);
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  const url = new URL(box.authorizationEndpoint);
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id: box.clientId,
    redirect_uri: redirectUri,
    scope: opts.scope,
    state,
    nonce,
    code_challenge: s256Challenge(verifier),
    code_challenge_method: 'S256',
  })) {
    url.searchParams.set(k, v);
  }
  opts.err(`Sign in to ${box.issuer} in your browser:\n\n    ${url.href}\n\n`);
  if (opts.openBrowser) openBrowser(opts.env, url.href, opts.err);

  let timer: NodeJS.Timeout | undefined;
  try {
    return await new Promise<SignedIn>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new CliError(`no sign-in within ${Math.round(opts.timeoutMs / 1000)} s; run the command again to retry`)),
        opts.timeoutMs,
      );
      let answered = false;
      server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
        const back = new URL(req.url ?? '/', redirectUri);
        if (back.pathname !== '/callback') return tab(res, 404, 'Not found', 'This address only takes the box’s redirect.');
        // Another page may send the browser here too: only this sign-in's state counts.
        if (answered || back.searchParams.get('state') !== state) {
          return tab(res, 400, 'Not this sign-in', 'This is not the sign-in the terminal is waiting for.');
        }
        answered = true;
        const error = back.searchParams.get('error');
        if (error) {
          const description = back.searchParams.get('error_description') ?? error;
          tab(res, 400, 'Sign-in failed', `${description}. Go back to the terminal.`);
          return reject(new CliError(`the box refused the sign-in: ${description} (${error})`));
        }
        box.exchangeCode(back.searchParams.get('code') ?? '', redirectUri, verifier, nonce).then(
          (signedIn) => {
            tab(res, 200, 'Signed in', `Signed in to ${box.issuer}. You can close this tab and go back to the terminal.`);
            resolve(signedIn);
          },
          (err: unknown) => {
            tab(res, 400, 'Sign-in failed', `${errorMessage(err)}. Go back to the terminal.`);
            reject(err instanceof Error ? err : new Error(String(err)));
          },
        );
      });
    });
  } finally {
    clearTimeout(timer);
    server.close();
    server.closeAllConnections();
  }
}
