// What the CLI shows of what the box said: escaped, so that no name or email can act on the terminal.

/**
 * Text that is safe to show on a terminal: control characters (a description may hold an
 * escape sequence that rewrites the screen) and bidi controls (marks, embeddings, overrides
 * and isolates: they make a line read in another order than it is) are shown escaped, never sent.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g, (ch) => {
    if (ch === '\n') return '\\n';
    if (ch === '\t') return '\\t';
    if (ch === '\r') return '\\r';
    return `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
}
