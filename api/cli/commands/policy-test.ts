// boxauth policy test: the cases of a file (./../policy-cases.ts), each a question with the
// decision expected, decided against a box's AccessPolicies or a directory of manifests with
// no box running (../policy-sources.ts), by the box's own code (../policy-verdicts.ts). For CI
// before a GitOps merge, as `opa test` is for Rego: each failing case is printed with what every
// policy made of it (as `boxauth explain` shows it), then PASS: n/m and FAIL: n/m; exit 1 when a
// case failed, 2 when the case file or a manifest is not one.
//
// Against a box, its policies are read (GET /AccessPolicy, with the CLI's credentials) and the
// cases decided here, by the same code, rather than by a route of the box that decides supplied
// requests: the manifests mode must decide here anyway, so one path decides both; a caller
// learns nothing a policy list does not already show it, and no route gains a way to ask about
// people; and a case file is then a statement about the policies, which gives the same answers
// against the box and against the manifests it was applied from.
import fs from 'node:fs';
import { errorMessage } from '../../errors.js';
import { PolicyIndex } from '../../policy/evaluate.js';
import { CliError } from '../api.js';
import { flag, text, usage, withBox, type Given, type Io, type OptionSpec, type VerbSpec } from '../command.js';
import { jsonText, outputFormat, printed, table, yamlText } from '../output.js';
import { readCases, type Case } from '../policy-cases.js';
import { readBox, readManifestDir, type PolicySources } from '../policy-sources.js';
import { decideCase, type CaseResult } from '../policy-verdicts.js';

export const POLICY_TEST_OPTIONS: Record<string, OptionSpec> = {
  manifests: {
    type: 'string',
    usage: '--manifests <dir>',
    summary: 'the AccessPolicies, Apps and Clients of the manifests in this directory (and below), not a box',
  },
  verbose: { type: 'boolean', short: 'v', summary: 'every case, passed ones too' },
};

export const POLICY_TEST_VERB: VerbSpec = {
  args: '-f <cases.yaml> [--manifests <dir>]',
  summary:
    "run a file's cases (a request and the decision expected) against the box's policies or a directory of manifests; exit 1 when one fails",
  options: ['filename', 'manifests', 'verbose', 'output'],
};

export const POLICY_TEST_NOTES = `policy test reads a case file (docs/concepts/access-control.md, "Testing policies"): each case
asks one question (api, app, authzen or exchange: who asks and the request) and says the decision
expected (expect: allow or deny; allowedBy: a policy among those that allow it). The box's own code
decides each case. A failing case is printed with each policy's verdict and why it did not allow;
-o json or yaml prints every case's result instead.

Examples:
  boxauth policy test -f cases.yaml                         # the current box's policies
  boxauth policy test -f cases.yaml --manifests deploy/     # manifests, no box running
  boxauth policy test -f cases.yaml --manifests deploy/ -o json
`;

const RULE = '-'.repeat(80);

/** Cases decided against the policies of `sources`; a stored policy that cannot run is said on stderr (it allows nothing, as in the box). */
async function run(cases: Case[], sources: PolicySources, io: Io): Promise<CaseResult[]> {
  const index = new PolicyIndex(sources.policies, (id, err) =>
    io.err(printed`warning: AccessPolicy ${id} cannot be evaluated, so it allows nothing (as in the box): ${errorMessage(err)}\n`),
  );
  const results: CaseResult[] = [];
  for (const c of cases) results.push(await decideCase(index, sources, c));
  return results;
}

const decisionWord = (allowed: boolean): string => (allowed ? 'allow' : 'deny');

/** A failed case as a person reads it: what was expected and what came out, and what each policy said. */
function failureText(r: CaseResult, c: Case): string {
  const wanted = `${decisionWord(c.expect.allow)}${c.expect.allowedBy ? ` by ${c.expect.allowedBy}` : ''}`;
  const lines = [printed`${r.at}: ${r.name}: expected ${wanted}, got ${decisionWord(r.allowed)} (${r.reason})\n`];
  if (r.policies.length) {
    const rows = table(r.policies, [
      { header: 'POLICY', cell: (p) => p.id },
      ...(r.policies.some((p) => p.side) ? [{ header: 'SIDE', cell: (p: CaseResult['policies'][number]) => p.side }] : []),
      { header: 'VERDICT', cell: (p) => p.verdict },
      { header: 'WHY', cell: (p) => p.why },
    ]);
    lines.push(rows.trimEnd().replace(/^/gm, '  ') + '\n');
  }
  if (r.request) lines.push(`  request: ${jsonText(r.request)}\n`);
  return lines.join('');
}

/** boxauth policy test. */
export async function policyTest(given: Given, io: Io): Promise<void> {
  const format = given.values.output === undefined ? 'table' : outputFormat(given.values, io);
  const file = text(given.values, 'filename');
  if (!file) throw usage('usage: boxauth policy test -f <cases.yaml> [--manifests <dir>]');
  let input: string;
  try {
    input = fs.readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${errorMessage(err)}`, 2);
  }
  const cases = readCases(input, file);
  const dir = text(given.values, 'manifests');
  const needs = {
    apps: cases.some((c) => c.question.kind === 'app' || c.question.kind === 'authzen'),
    clients: cases.some((c) => c.question.kind === 'api' || c.question.kind === 'exchange'),
  };
  const skipped = (what: string): void => io.err(`skipped ${what} (not an AccessPolicy, App or Client)\n`);
  const sources = dir !== undefined ? readManifestDir(dir, skipped) : await withBox(io, (api) => readBox(api, needs));
  const results = await run(cases, sources, io);
  const failed = results.filter((r) => !r.passed);

  if (format !== 'table') {
    const report = { from: sources.from, passed: results.length - failed.length, failed: failed.length, cases: results };
    io.out(format === 'yaml' ? yamlText(report) : `${jsonText(report, 2)}\n`);
  } else {
    if (failed.length) {
      io.out(`FAILURES\n${RULE}\n`);
      io.out(failed.map((r) => failureText(r, cases[results.indexOf(r)]!)).join('\n'));
      io.out('\n');
    }
    if (flag(given.values, 'verbose')) {
      io.out(`SUMMARY\n${RULE}\n`);
      for (const r of results) io.out(printed`${r.at}: ${r.name}: ${r.passed ? 'PASS' : 'FAIL'}\n`);
    }
    io.out(`${RULE}\nPASS: ${results.length - failed.length}/${results.length}\n`);
    if (failed.length) io.out(`FAIL: ${failed.length}/${results.length}\n`);
  }
  if (failed.length) throw new CliError(`${failed.length} of ${results.length} cases failed against ${sources.from}`, 1);
}
