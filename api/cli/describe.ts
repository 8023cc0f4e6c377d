// `describe`, as kubectl describe: one record in words, a field a line, and after it what is
// related to it (a user's groups and sessions, an app's policies). Everything the box said is
// shown escaped (printable, yamlText).
import { printable, yamlText } from './output.js';

/** A field's name as a label: `grant_types` and `redirectUris` both read "Grant types", "Redirect uris". */
function label(name: string): string {
  const words = name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function scalar(value: unknown): boolean {
  return value === null || typeof value !== 'object';
}

/** A value on its label's line when it fits one (a scalar, a list of scalars), else as YAML below it. */
function valueText(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (Array.isArray(value) && value.every(scalar)) return value.length ? value.map((v) => printable(String(v))).join(', ') : '-';
  if (scalar(value)) return printable(String(value));
  return (
    '\n' +
    yamlText(value)
      .trimEnd()
      .split('\n')
      .map((line) => `    ${line}`)
      .join('\n')
  );
}

/** The record's fields, then the sections about related records, their values aligned. */
export function describeText(title: string, fields: Record<string, unknown>, related: [string, string][]): string {
  const rows: [string, string][] = [
    ...Object.entries(fields).map(([name, value]): [string, string] => [label(name), valueText(value)]),
    ...related.map(([name, value]): [string, string] => [name, value.includes('\n') ? `\n${indent(value)}` : value]),
  ];
  const width = Math.max(...rows.map(([name]) => name.length)) + 1;
  return `${printable(title)}\n${rows.map(([name, value]) => `  ${`${name}:`.padEnd(width)}${value.startsWith('\n') ? '' : ' '}${value}`.trimEnd()).join('\n')}\n`;
}

function indent(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n');
}
