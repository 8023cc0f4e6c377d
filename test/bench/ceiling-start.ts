// A ceiling server (./ceiling*.ts) started on a free port: the port is handed to its workers ahead, and
// another process of the machine may take it before they listen (the bench runs beside other work):
// it starts again on a new one when its stderr says the port was taken.
import { spawn, type ChildProcess } from 'node:child_process';
import { projectPath } from '../../api/paths.js';
import { errorMessage } from '../../api/errors.js';
import { onFreePorts } from '../support/ports.js';

export interface Ceiling {
  child: ChildProcess;
  port: number;
  exited: Promise<unknown>;
}

/** `script` (under dist/test/bench) with `env` and CEILING_PORT, once `started` resolves for it (it rejects: the start failed). */
export function startCeiling(
  script: string,
  env: NodeJS.ProcessEnv,
  started: (port: number, child: ChildProcess) => Promise<void>,
): Promise<Ceiling> {
  return onFreePorts(1, async ([port]) => {
    const child = spawn(process.execPath, [projectPath('dist', 'test', 'bench', script)], {
      env: { ...env, CEILING_PORT: String(port) },
      stdio: ['inherit', 'inherit', 'pipe'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    let output = '';
    const read = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
    };
    child.stderr.on('data', read);
    child.stderr.pipe(process.stderr);
    try {
      await started(port, child);
      child.stderr.off('data', read);
      return { child, port, exited };
    } catch (err) {
      child.kill('SIGTERM');
      await exited;
      throw new Error(`${script} did not start: ${errorMessage(err)}\n${output}`, { cause: err });
    }
  });
}
