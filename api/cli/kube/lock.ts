// One sign-in or refresh at a time per token cache file. kubectl runs the plugin
// once per process, and people run kubectl in parallel: two refreshes of one
// rotating refresh token would look like a stolen token to the box, which then
// closes the session. The lock file holds the owner's pid, so a lock left by a
// process that died is taken over instead of waited for.
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { CliError } from '../api.js';

function ownerAlive(lockFile: string): boolean {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(lockFile, 'utf8').trim());
  } catch {
    return false; // gone meanwhile
  }
  // A file without a pid yet is being written by its owner.
  if (!Number.isInteger(pid) || pid <= 0) return Date.now() - (fs.statSync(lockFile, { throwIfNoEntry: false })?.mtimeMs ?? 0) < 5000;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function withLock<T>(lockFile: string, waitMs: number, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      const fd = fs.openSync(lockFile, 'wx', 0o600);
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (!ownerAlive(lockFile)) {
      fs.rmSync(lockFile, { force: true });
      continue;
    }
    if (Date.now() >= deadline) {
      throw new CliError(`another boxauth kube-login is signing in (lock ${lockFile}); finish that sign-in, or remove the file`);
    }
    await sleep(200);
  }
  try {
    return await work();
  } finally {
    fs.rmSync(lockFile, { force: true });
  }
}
