// The language of the page a person asked from, for the mail it leads to (a template per
// language: docs/guides/email.md). Only a well-formed BCP 47 tag goes on; anything else is none.
import { languageRanges } from '../ui/language.js';
import type { Request } from './router.js';

export function pageLanguage(req: Request): string | undefined {
  const first = languageRanges(req.headers['accept-language']).find((r) => r.q > 0)?.range;
  return first && /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$/.test(first) ? first.toLowerCase() : undefined;
}
