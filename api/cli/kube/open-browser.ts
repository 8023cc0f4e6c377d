// Opening the sign-in page in the person's browser, when there is one: $BROWSER
// (a command, perhaps with options: the shell splits it; the URL is passed as an
// argument, never spliced into the command), else xdg-open on a desktop. The URL
// is printed as well, so a browser that does not open costs nothing.
import { spawn } from 'node:child_process';

export function browserCommand(env: NodeJS.ProcessEnv, url: string): { file: string; args: string[] } | undefined {
  if (env.BROWSER?.trim()) return { file: '/bin/sh', args: ['-c', `${env.BROWSER} "$1"`, 'sh', url] };
  if (env.DISPLAY || env.WAYLAND_DISPLAY) return { file: 'xdg-open', args: [url] };
  return undefined;
}

/** Starts the browser and lets it live on; says on `err` when it cannot. */
export function openBrowser(env: NodeJS.ProcessEnv, url: string, err: (text: string) => void): void {
  const command = browserCommand(env, url);
  if (!command) return;
  const child = spawn(command.file, command.args, { stdio: 'ignore', detached: true, env });
  child.on('error', (e) => err(`(could not open a browser: ${e.message}; open the address above by hand)\n`));
  child.unref();
}
