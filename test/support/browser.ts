// Headless Chromium from Debian, driven by playwright-core, and the example app's
// static server, for the browser tests.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { projectPath } from '../../api/paths.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchBrowser(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium (make test does)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    // As the machine's own probe runs it: no sandbox as root, and no background network chatter.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/** A device's passkey holder on one page: Chromium's DevTools WebAuthn virtual authenticator. */
export interface VirtualAuthenticator {
  /** The passkeys it holds now (their relying party ids, whether discoverable). */
  credentials(): Promise<{ rpId?: string; isResidentCredential: boolean }[]>;
}

/**
 * A platform authenticator on `page` (ctap2, internal, resident keys, user verification given
 * at once: a person who unlocks the device every time), as a laptop's screen lock holds passkeys.
 */
export async function addVirtualAuthenticator(context: BrowserContext, page: Page): Promise<VirtualAuthenticator> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { credentials: async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials };
}

/**
 * From the next page on, the browser offers no passkey autofill: the virtual authenticator would
 * answer the sign-in page's quiet (conditional) request at once, before a person types a password
 * or clicks a button.
 */
export async function withoutPasskeyAutofill(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);
  });
}

const ARTIFACTS = projectPath('test-artifacts');

/** Saves a screenshot under test-artifacts/ (not committed). */
export async function screenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}

export interface ExampleApp {
  url: string;
  stop(): Promise<void>;
}

/** examples/browser-app served as `make example-app` serves it, on its own port 0 (the port it prints). */
export async function startExampleApp(env: { BOX_URL?: string; CLIENT_ID?: string } = {}): Promise<ExampleApp> {
  const child: ChildProcess = spawn(process.execPath, [projectPath('examples', 'browser-app', 'serve.mjs'), '0'], {
    stdio: 'pipe',
    env: { ...process.env, ...env },
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (line: Buffer) => {
      const printed = /localhost:(\d+)\//.exec(line.toString());
      if (printed) resolve(printed[1]!);
      else reject(new Error(`example app: no port in ${JSON.stringify(line.toString())}`));
    });
    child.once('exit', (code) => reject(new Error(`example app exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
