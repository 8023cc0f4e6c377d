// `boxauth`: the command line of boxauth (bin/boxauth.js runs this file; the commands are in program.ts).
import { errorMessage } from '../errors.js';
import type { Io } from './command.js';
import { main } from './program.js';
import { Prompter } from './prompt.js';

const io: Io = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  prompter: () => new Prompter(),
  env: process.env,
  cwd: process.cwd(),
  terminal: process.stdout.isTTY === true,
};

main(process.argv.slice(2), io).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`boxauth: ${errorMessage(err)}\n`);
    process.exitCode = 1;
  },
);
