// Files of one person that hold secrets (client secrets, tokens): in a directory
// only they may enter, readable only by them, and replaced in one step so that a
// reader never sees half a file, nor a crash leaves one.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export function writePrivateFile(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    fs.writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}
