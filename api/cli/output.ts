// How lists and records are printed (--output): a table for a person at a terminal,
// JSON for a program reading a pipe, YAML on request.
import { stringify } from 'yaml';
import { CliError } from './api.js';
import type { Io, Values } from './command.js';
import { printable } from './printable.js';

export { printable };

export type OutputFormat = 'table' | 'json' | 'yaml';

/** How a list or a get prints: --output, else a table on a terminal and JSON otherwise. */
export function outputFormat(values: Values, io: Io): OutputFormat {
  const value = values.output;
  if (value === undefined) return io.terminal ? 'table' : 'json';
  if (value === 'table' || value === 'json' || value === 'yaml') return value;
  throw new CliError(`--output must be table, json or yaml, not "${printable(String(value))}"`, 2);
}

/** How a change prints: a line for a person, or with -o json|yaml the record as written. */
export type ChangeFormat = 'line' | 'json' | 'yaml';

export function changeFormat(values: Values): ChangeFormat {
  const value = values.output;
  if (value === undefined) return 'line';
  if (value === 'json' || value === 'yaml') return value;
  throw new CliError(`--output of a change must be json or yaml (the record as written), not "${printable(String(value))}"`, 2);
}

/** A change done: its line, or the record as written (without `password`: the hash a box of an older release still sent). */
export function printChange(io: Io, format: ChangeFormat, record: unknown, line: string): void {
  if (format === 'line') return io.out(line);
  const shown =
    record && typeof record === 'object' && !Array.isArray(record) && 'password' in record
      ? Object.fromEntries(Object.entries(record).filter(([k]) => k !== 'password'))
      : record;
  io.out(format === 'yaml' ? yamlText(shown) : `${jsonText(shown, 2)}\n`);
}

export interface Column<T> {
  header: string;
  cell: (row: T) => unknown;
}

/** A line for a person that holds what the box said (emails, names): every value put in goes through printable. */
export function printed(strings: TemplateStringsArray, ...values: unknown[]): string {
  return strings.reduce((line, text, i) => line + printable(String(values[i - 1])) + text);
}

/**
 * Characters JSON and YAML leave as they are in a string and a terminal acts on: C1 controls (an
 * 8-bit CSI rewrites the screen as ESC [ does) and bidi controls (they reorder the line). The C0
 * controls both formats escape already.
 */
const RAW_CONTROLS = /[\u0080-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
const escaped = (ch: string): string => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** `value` as JSON text with RAW_CONTROLS escaped (\uXXXX: the same JSON to a program, inert on a terminal). */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(RAW_CONTROLS, escaped);
}

/** `value` as YAML; with a RAW_CONTROLS character, every string double-quoted so that it is written escaped. */
export function yamlText(value: unknown): string {
  const text = stringify(value);
  if (text.search(RAW_CONTROLS) === -1) return text;
  return stringify(value, { defaultStringType: 'QUOTE_DOUBLE', defaultKeyType: 'QUOTE_DOUBLE', lineWidth: 0 }).replace(
    RAW_CONTROLS,
    escaped,
  );
}

function cellText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (Array.isArray(value)) return value.map(cellText).join(',');
  if (typeof value === 'object') return printable(JSON.stringify(value));
  return printable(String(value));
}

/** Columns padded to their widest cell, headers first; no line ends in spaces. */
export function table<T>(rows: T[], columns: Column<T>[]): string {
  const cells = [columns.map((c) => c.header), ...rows.map((row) => columns.map((c) => cellText(c.cell(row))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]!.length)));
  return (
    cells
      .map((line) =>
        line
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n'
  );
}

/** A list: one row per record in a table, or the records as a JSON or YAML array. */
export function printList<T>(io: Io, format: OutputFormat, records: T[], columns: Column<T>[]): void {
  if (format === 'table') io.out(table(records, columns));
  else if (format === 'yaml') io.out(records.length ? yamlText(records) : '[]\n');
  else io.out(`${jsonText(records, 2)}\n`);
}

/** One record: a table of one row (the list's columns), or the whole record in JSON or YAML. */
export function printRecord<T>(io: Io, format: OutputFormat, record: T, columns: Column<T>[]): void {
  if (format === 'table') io.out(table([record], columns));
  else if (format === 'yaml') io.out(yamlText(record));
  else io.out(`${jsonText(record, 2)}\n`);
}
