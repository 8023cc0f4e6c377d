// requests-oauth2client, a Python OAuth client none of us wrote, driven through
// test/py-client/client.py: one JSON command in, one JSON result out. Its venv is
// built by scripts/test-tools-build.sh (make test-tools; .ci/run runs it first).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { projectPath } from '../../api/paths.js';

const REQUIREMENTS = projectPath('test', 'py-client', 'requirements.txt');
const DRIVER = projectPath('test', 'py-client', 'client.py');
const TOOLS = process.env.BOXAUTH_TOOLS_CACHE ?? path.join(os.homedir(), '.cache', 'boxauth', 'tools');

/**
 * The venv's python: py-<the first 16 hex digits of requirements.txt's SHA-256>, the
 * name scripts/test-tools-build.sh gives it, so a changed requirements.txt never runs
 * against the venv of the old one.
 */
export function pyClientPython(): string {
  const digest = createHash('sha256').update(fs.readFileSync(REQUIREMENTS)).digest('hex').slice(0, 16);
  return path.join(TOOLS, `py-${digest}`, 'bin', 'python');
}

/** Throws, naming the script that builds it, when the venv of this requirements.txt is not built. */
export function requirePyClient(): void {
  const python = pyClientPython();
  if (!fs.existsSync(path.join(path.dirname(python), '..', '.complete'))) {
    throw new Error(
      `the Python client's venv is not built (${path.dirname(path.dirname(python))}): ` +
        'run scripts/test-tools-build.sh (make test-tools), which .ci/run runs before make test',
    );
  }
}

/** The library's error, as client.py reports it: its exception class and the RFC error. */
export interface PyClientError {
  class: string;
  error: string | null;
  description: string | null;
  status: number;
}

/** What client.py prints (test/py-client/client.py's docstring says which field each action fills). */
export interface PyClientResult {
  ok: boolean;
  token?: Record<string, unknown> & { access_token: string; token_type: string };
  token_class?: string;
  introspection?: Record<string, unknown>;
  error?: PyClientError;
  resource?: { status: number; body: unknown; www_authenticate: string | null };
  /** With dpop: the thumbprint of the key (RFC 7638). */
  dpop_jkt?: string;
  /** par: the pushed request's reference, the URL a browser is sent to, and what the client keeps for the callback. */
  request_uri?: string;
  authorization_url?: string;
  state?: string;
  code_verifier?: string;
  [field: string]: unknown;
}

/** Runs one command (test/py-client/client.py's docstring lists them); rejects when the driver itself fails. */
export function pyClient(command: Record<string, unknown>): Promise<PyClientResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(pyClientPython(), [DRIVER], { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`client.py ${String(command.action)}: ${err.message}\n${stderr}`, { cause: err }));
      try {
        resolve(JSON.parse(stdout) as PyClientResult);
      } catch (parseError) {
        reject(new Error(`client.py printed no JSON: ${stdout}\n${stderr}`, { cause: parseError }));
      }
    });
    child.stdin!.end(JSON.stringify(command));
  });
}
