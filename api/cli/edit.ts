// `edit`, as kubectl edit: the record as YAML in a private temporary file, the person's editor
// on it ($VISUAL, else $EDITOR, else vi; run by the shell, so "code --wait" works), then what
// they saved is what is put back. A file saved unchanged changes nothing.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errorMessage } from '../errors.js';
import { readYaml } from '../yaml.js';
import { CliError } from './api.js';
import type { Io } from './command.js';
import { yamlText } from './output.js';

const HEADER = `# Edit the record below and save it to put it back; save it unchanged (or quit) to change nothing.
# Lines beginning with '#' are ignored.
`;

/** The record as the person saved it in their editor; undefined when they changed nothing. */
export function editedRecord(io: Io, record: Record<string, unknown>, label: string): Record<string, unknown> | undefined {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-edit-'));
  const file = path.join(dir, `${label.replace(/[^A-Za-z0-9._-]/g, '_')}.yaml`);
  try {
    fs.writeFileSync(file, HEADER + yamlText(record), { mode: 0o600 });
    const editor = io.env.VISUAL || io.env.EDITOR || 'vi';
    const run = spawnSync('sh', ['-c', `${editor} "$1"`, 'sh', file], { stdio: 'inherit', env: io.env, cwd: io.cwd });
    if (run.error) throw new CliError(`cannot run the editor "${editor}": ${errorMessage(run.error)}; nothing changed`);
    if (run.status !== 0) throw new CliError(`the editor "${editor}" exited with ${run.status ?? run.signal}; nothing changed`);
    let documents: unknown[];
    try {
      documents = readYaml(fs.readFileSync(file, 'utf8'));
    } catch (err) {
      throw new CliError(`the edited file is not YAML (${errorMessage(err)}); nothing changed`);
    }
    const [edited] = documents;
    if (documents.length !== 1 || !edited || typeof edited !== 'object' || Array.isArray(edited))
      throw new CliError('the edited file must hold one record (a YAML mapping); nothing changed');
    if (JSON.stringify(edited) === JSON.stringify(record)) return undefined;
    return edited as Record<string, unknown>;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
