// Hooks of boxauth's in other processes, in the two languages the guide (docs/guides/hooks.md)
// gives examples in: test/hooks/hook_server.py (Python's standard library) and test/hooks/go
// (Go's). Each serves HTTPS with a certificate of the test's CA, checks every call's Standard
// Webhooks signature (401 for one unsigned, stale, forged or replayed) and answers by its path
// (/claims, /refuse, /refuse-markup (Python's), /slow/<ms>, /hang, /garbage, /redirect/<port>, /stepup, /person, /password/<p>);
// GET / lists what it got.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent } from 'undici';
import { projectPath } from '../../api/paths.js';
import type { TestCa } from './tls.js';

export type HookLanguage = 'python' | 'go';

/** What a hook server got: each request, whether its signature held (problem: null) or why not. */
export interface Seen {
  path: string;
  problem: string | null;
  headers: Record<string, string>;
  body: string;
  box: string | null;
  hook: string | null;
  moment: string | null;
}

let goBinary: string | undefined;

/**
 * The Go hook, built once per run (Go's build cache makes it quick after the first): static (no cgo),
 * so that it is also a container image's one file (test/pods).
 */
export function goHook(): string {
  if (!goBinary) {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-hook-')), 'hook');
    execFileSync('go', ['build', '-trimpath', '-o', out, '.'], {
      cwd: projectPath('test', 'hooks', 'go'),
      env: { ...process.env, CGO_ENABLED: '0' },
      stdio: 'pipe',
    });
    goBinary = out;
  }
  return goBinary;
}

export class HookServer {
  private constructor(
    readonly language: HookLanguage,
    readonly url: string,
    readonly port: number,
    private readonly child: ChildProcess,
    private readonly dispatcher: Agent,
  ) {}

  /** Starts a hook in `language` checking calls with `secret`, its certificate issued by `ca`. */
  static async start(language: HookLanguage, secret: string, ca: TestCa, port = 0): Promise<HookServer> {
    const { certFile, keyFile } = ca.issue(`hook-${language}-${Math.random().toString(36).slice(2)}`);
    const env = { ...process.env, SECRET: secret, CERT: certFile, KEY: keyFile, PORT: String(port) };
    const child =
      language === 'python'
        ? spawn('python3', [projectPath('test', 'hooks', 'hook_server.py')], { env, stdio: ['ignore', 'pipe', 'inherit'] })
        : spawn(goHook(), [], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    const listening = await new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const m = /listening (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', (code) => reject(new Error(`the ${language} hook ended (${code}) before it listened`)));
    });
    return new HookServer(language, `https://127.0.0.1:${listening}`, listening, child, ca.dispatcher);
  }

  /** What it got so far. */
  async seen(): Promise<Seen[]> {
    const res = await fetch(`${this.url}/`, { dispatcher: this.dispatcher } as RequestInit);
    return (await res.json()) as Seen[];
  }

  /** POSTs `body` with `headers` to it as the box would (a replay, an unsigned call): its status and answer. */
  async post(pathname: string, headers: Record<string, string>, body: string): Promise<{ status: number; text: string }> {
    const res = await fetch(`${this.url}${pathname}`, { method: 'POST', headers, body, dispatcher: this.dispatcher } as RequestInit);
    return { status: res.status, text: await res.text() };
  }

  /** Ends it with `signal` (SIGKILL: as a node that died), and waits for its end. */
  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const ended = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill(signal);
    await ended;
  }
}
