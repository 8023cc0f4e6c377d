// The subjects of other issuers a Client is bound to (auth.workload.federated): which binding, if
// any, accepts a token of issuer `iss` for subject `sub` and audience `aud`. Pure: the signature and
// times were checked before (api/credentials/workload/assertion.ts); here only names are compared.
//
// A binding names its subject exactly, or by a pattern where each `*` stands for any run of
// characters other than a colon. The subjects of CI issuers and of Kubernetes are colon-separated
// paths (GitHub Actions: `repo:org/repo:ref:refs/heads/main`; GitLab CI:
// `project_path:group/project:ref_type:branch:ref:main`; Kubernetes:
// `system:serviceaccount:ns:name`), so a `*` that cannot cross a colon cannot turn a pattern for
// one repository's branches into one for its pull requests or environments. The text before the
// first `*` must hold a colon and a character after it: the kind of subject and the start of its
// name are fixed, so no pattern is a bare wildcard (`*`, `repo:*`) that any repository matches.

/** A binding of a Client to a subject of a trusted issuer (the Client CRD's auth.workload.federated). */
export interface FederatedBinding {
  issuer: string;
  subject?: string;
  subjectPattern?: string;
  audience?: string;
}

/** The most `*` a pattern may hold: matching is O(pattern × subject) per colon-separated segment. */
const MAX_STARS = 8;

/** Why `pattern` is not a subject pattern the box accepts; undefined when it is one. */
export function subjectPatternProblem(pattern: string): string | undefined {
  const star = pattern.indexOf('*');
  if (star < 0) return 'has no *: write an exact subject as subject';
  const prefix = pattern.slice(0, star);
  const colon = prefix.indexOf(':');
  if (colon < 1 || colon === prefix.length - 1)
    return 'must fix the kind of subject and the start of its name before the first * (e.g. repo:org/*), never a bare wildcard';
  if (pattern.split('*').length - 1 > MAX_STARS) return `has more than ${MAX_STARS} of *`;
  return undefined;
}

/**
 * Whether `text` (one colon-free segment) matches `pattern` (one segment, `*` any run): the
 * two-pointer wildcard match, which backtracks only to the last `*`, so its time is bounded by the
 * product of the lengths, whatever a tenant writes.
 */
function segmentMatches(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let starAt = -1;
  let resumeAt = 0;
  while (t < text.length) {
    if (p < pattern.length && pattern[p] !== '*' && pattern[p] === text[t]) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === '*') {
      starAt = p++;
      resumeAt = t;
    } else if (starAt >= 0) {
      p = starAt + 1;
      t = ++resumeAt;
    } else return false;
  }
  while (pattern[p] === '*') p++;
  return p === pattern.length;
}

/** Whether `subject` matches `pattern` (colons match colons; `*` never crosses one). */
export function subjectMatches(pattern: string, subject: string): boolean {
  const patterns = pattern.split(':');
  const segments = subject.split(':');
  return patterns.length === segments.length && patterns.every((p, i) => segmentMatches(p, segments[i]!));
}

/** Whether `binding` names this issuer and subject (its audience is checked apart: api/credentials/workload/assertion.ts). */
export function bindingNames(binding: FederatedBinding, issuer: string, subject: string): boolean {
  if (binding.issuer !== issuer) return false;
  if (binding.subject !== undefined) return binding.subject === subject;
  return binding.subjectPattern !== undefined && subjectPatternProblem(binding.subjectPattern) === undefined
    ? subjectMatches(binding.subjectPattern, subject)
    : false;
}

/** The problems of a Client's federated bindings beyond their shape, by field (for a 422). */
export function federatedProblems(bindings: readonly FederatedBinding[] | undefined): Record<string, string[]> {
  const problems: Record<string, string[]> = {};
  (bindings ?? []).forEach((b, i) => {
    const problem = b.subjectPattern !== undefined ? subjectPatternProblem(b.subjectPattern) : undefined;
    if (problem) (problems[`auth.workload.federated[${i}].subjectPattern`] ??= []).push(`the pattern ${problem}`);
  });
  return problems;
}
