// The tables of a page of docs/, read for the tests that hold a page to the registry it
// describes (operator/reasons.ts, api/mail/kinds.ts): a row a person reads must say what the code does.
import fs from 'node:fs';
import { projectPath } from '../../api/paths.js';

/** The rows of every table of the page (`docs/...` relative to the project), each row's cells as text, its header first. */
export function pageTables(page: string): string[][][] {
  const text = fs.readFileSync(projectPath(...page.split('/')), 'utf8');
  const tables: string[][][] = [];
  let current: string[][] | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith('|')) {
      current = undefined;
      continue;
    }
    if (/^\|[-| ]+\|$/.test(line)) continue; // the separator under the header
    if (!current) tables.push((current = []));
    current.push(
      line
        .slice(1, -1)
        .split('|')
        .map((cell) => cell.trim()),
    );
  }
  return tables;
}

/** The names in backquotes of a cell, leaving out what parentheses explain. */
export const backquoted = (cell: string): string[] => [...cell.replace(/\([^()]*\)/g, '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
