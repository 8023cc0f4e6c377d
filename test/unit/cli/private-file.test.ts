import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writePrivateFile } from '../../../api/cli/private-file.js';

describe('private files', function () {
  let dir: string;
  beforeEach(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-private-'));
  });
  afterEach(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('are made in a new directory of mode 0700, with mode 0600', function () {
    const file = path.join(dir, 'a', 'b', 'tokens.json');
    writePrivateFile(file, 'secret');
    expect(fs.statSync(path.join(dir, 'a', 'b')).mode & 0o777).to.equal(0o700);
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(fs.readFileSync(file, 'utf8')).to.equal('secret');
  });

  it('are replaced in one step: a reader holding the old file reads it whole, and no temporary file is left', function () {
    const file = path.join(dir, 'tokens.json');
    writePrivateFile(file, 'old');
    fs.chmodSync(file, 0o644); // as if someone widened it: the new file is 0600 again
    const reader = fs.openSync(file, 'r');
    try {
      writePrivateFile(file, 'new');
      expect(fs.readFileSync(reader, 'utf8')).to.equal('old');
    } finally {
      fs.closeSync(reader);
    }
    expect(fs.readFileSync(file, 'utf8')).to.equal('new');
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(fs.readdirSync(dir)).to.deep.equal(['tokens.json']);
  });

  it('leave nothing behind when the write fails', function () {
    const file = path.join(dir, 'is-a-directory');
    fs.mkdirSync(file);
    expect(() => writePrivateFile(file, 'x')).to.throw();
    expect(fs.readdirSync(dir)).to.deep.equal(['is-a-directory']);
  });
});
