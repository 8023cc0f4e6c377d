// scim2-tester (python-scim's SCIM 2.0 compliance checks, pinned in test/py-client/requirements.txt)
// run through test/py-client/scim_check.py against a SCIM base URL; its venv is the one of
// test/support/py-client.ts.
import { execFile } from 'node:child_process';
import { projectPath } from '../../api/paths.js';
import { pyClientPython } from './py-client.js';

const DRIVER = projectPath('test', 'py-client', 'scim_check.py');

/** One HTTP exchange a failed check made (no header: the token stays out). */
export interface ScimExchange {
  method: string;
  url: string;
  params?: Record<string, unknown>;
  request?: unknown;
  status?: number;
  response?: unknown;
}

/** One result of one check, as scim_check.py prints it. */
export interface ScimCheck {
  /** The check, prefixed by the resource type and suffixed by the attribute a PATCH check tried. */
  name: string;
  title: string | null;
  resource_type: string | null;
  status: 'SUCCESS' | 'COMPLIANT' | 'ACCEPTABLE' | 'DEVIATION' | 'ERROR' | 'CRITICAL' | 'SKIPPED';
  reason: string | null;
  description: string;
  data: unknown;
  /** On ERROR and CRITICAL: what the check sent and what the server answered. */
  exchanges?: ScimExchange[];
}

/** Statuses scim2-tester gives a server that breaks a MUST of RFC 7643/7644. */
export const FAILED: ReadonlySet<ScimCheck['status']> = new Set(['ERROR', 'CRITICAL']);

/** Runs scim2-tester's checks (all, or those with one of `tags`) against `baseUrl` with `token`. */
export function scim2Tester(baseUrl: string, token: string, tags: string[] = []): Promise<ScimCheck[]> {
  return new Promise((resolve, reject) => {
    execFile(
      pyClientPython(),
      [DRIVER, baseUrl, ...tags],
      { env: { ...process.env, SCIM_TOKEN: token }, timeout: 120_000, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) return reject(new Error(`scim_check.py: ${err.message}\n${stderr}`, { cause: err }));
        try {
          resolve(
            stdout
              .split('\n')
              .filter((line) => line.trim())
              .map((line) => JSON.parse(line) as ScimCheck),
          );
        } catch (parseError) {
          reject(new Error(`scim_check.py printed something other than JSON lines: ${stdout}\n${stderr}`, { cause: parseError }));
        }
      },
    );
  });
}

/** A failed check as a reader needs it: the check, why, and every exchange it made (long bodies cut). */
export function describeFailure(check: ScimCheck): string {
  const exchanges = (check.exchanges ?? []).map(
    (e) =>
      `  ${e.method} ${e.url}${e.params ? ` ${JSON.stringify(e.params)}` : ''}` +
      `${e.request !== undefined ? `\n    request: ${cut(e.request)}` : ''}` +
      `\n    -> ${e.status ?? 'no response'} ${cut(e.response)}`,
  );
  return [`${check.status} ${check.name}: ${check.reason}`, `  (${check.description})`, `  data: ${cut(check.data)}`, ...exchanges].join(
    '\n',
  );
}

/** JSON, cut after `max` characters: a failure's message stays readable with a whole User in it. */
function cut(value: unknown, max = 1500): string {
  const json = JSON.stringify(value) ?? 'undefined';
  return json.length > max ? `${json.slice(0, max)}… (${json.length} characters)` : json;
}
