// The language of the page a person asked from, for the mail it leads to (a template per
// language: docs/guides/email.md). Only a well-formed BCP 47 tag goes on; anything else is none.
import type { Request } from 'express';

export function pageLanguage(req: Request): string | undefined {
  const first = req.acceptsLanguages()[0];
  return first && /^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$/.test(first) ? first.toLowerCase() : undefined;
}
