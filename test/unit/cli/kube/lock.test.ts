import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CliError } from '../../../../api/cli/api.js';
import { withLock } from '../../../../api/cli/kube/lock.js';

describe('the kube-login lock', function () {
  let dir: string;
  let lock: string;
  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-lock-'));
    lock = path.join(dir, 'tokens.json.lock');
  });
  afterEach(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is held while the work runs, with the holder’s pid, and released after it, even when it fails', async function () {
    await withLock(lock, 0, async () => {
      expect(fs.readFileSync(lock, 'utf8')).to.equal(String(process.pid));
    });
    expect(fs.existsSync(lock)).to.equal(false);
    const failed = await withLock(lock, 0, () => Promise.reject(new Error('boom'))).catch((err: Error) => err);
    expect(failed).to.be.instanceOf(Error).with.property('message', 'boom');
    expect(fs.existsSync(lock)).to.equal(false);
  });

  it('is taken over from a process that died; a live holder makes the caller give up after its wait', async function () {
    fs.writeFileSync(lock, '4194304'); // above Linux's pid_max: no such process
    expect(await withLock(lock, 0, () => Promise.resolve('ran'))).to.equal('ran');
    fs.writeFileSync(lock, String(process.pid));
    const refused = await withLock(lock, 0, () => Promise.resolve('ran')).catch((err: Error) => err);
    expect(refused).to.be.instanceOf(CliError);
    expect((refused as Error).message).to.include('another boxauth kube-login is signing in');
    expect(fs.readFileSync(lock, 'utf8')).to.equal(String(process.pid)); // not the caller's to remove
  });
});
