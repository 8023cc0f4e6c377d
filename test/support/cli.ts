// The `boxauth` command run as a script would run it (stdout a pipe, so lists print JSON unless
// --output says otherwise), for tests that drive the CLI against a box.
import { spawn } from 'node:child_process';
import { projectPath } from '../../api/paths.js';

export const CLI = projectPath('bin', 'boxauth.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `boxauth <args>` with exactly `env`, `input` as its stdin; resolves once it exits. */
export function runCli(args: string[], env: NodeJS.ProcessEnv, input = ''): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}
