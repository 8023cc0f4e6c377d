// The load hook of ./module-trace.ts: appends each ECMAScript module's URL to the file it is given
// (hooks run on a thread of their own, so the file is where they meet the process).
import fs from 'node:fs';

let file = '';

export function initialize(data: { file: string }): void {
  file = data.file;
}

export async function load(
  url: string,
  context: object,
  next: (url: string, context: object) => Promise<{ format?: string | null }>,
): Promise<unknown> {
  const loaded = await next(url, context);
  if (url.startsWith('file:')) fs.appendFileSync(file, `${url.slice('file://'.length)}\n`);
  return loaded;
}
