// What a page of the box says that is none of its catalogue's words (api/messages/): every text
// of a page must be a sentence of the page's language, a value put into one (an address, a name,
// a number), or something the page was told to show as written. A sentence a route wrote in
// English into a German page is what is left once all of those are taken out.
import type { Language } from '../../api/ui/language.js';

/** The product's own name, in the title of every page. */
const NAMES = ['boxauth'];

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

const decoded = (text: string): string =>
  text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (all, name: string) =>
    name.startsWith('#x') || name.startsWith('#X')
      ? String.fromCodePoint(parseInt(name.slice(2), 16))
      : name.startsWith('#')
        ? String.fromCodePoint(Number(name.slice(1)))
        : (ENTITIES[name.toLowerCase()] ?? all),
  );

/** The texts a person reads on a page: its title and the text between the tags of its body, scripts and styles left out. */
export function pageTexts(page: string): string[] {
  const title = /<title>([\s\S]*?)<\/title>/i.exec(page)?.[1] ?? '';
  const body = /<body[^>]*>([\s\S]*)<\/body>/i.exec(page)?.[1] ?? page;
  return [title, ...body.replace(/<(script|style)\b[\s\S]*?<\/\1>/gi, '').split(/<[^>]*>/)]
    .map((t) => decoded(t).replace(/\s+/g, ' ').trim())
    .filter((t) => /\p{L}/u.test(t));
}

/**
 * The texts of `page` that are not the words of `language`'s catalogue: each text with every
 * catalogue string's fixed parts (the text between its placeholders) and every value of `data`
 * taken out, kept when a word of two letters or more is left.
 */
export function strayTexts(page: string, language: Language, data: readonly string[] = []): string[] {
  const parts = [
    ...new Set(
      Object.values(language.messages)
        .flatMap((text) => text.split(/\{[a-zA-Z][a-zA-Z0-9]*\}/))
        .map((p) => p.replace(/\s+/g, ' ').trim())
        .filter((p) => /\p{L}/u.test(p)),
    ),
    ...NAMES,
    ...data,
  ].sort((a, b) => b.length - a.length);
  return pageTexts(page).filter((text) => {
    let left = text;
    for (const part of parts) left = left.split(part).join(' ');
    return /\p{L}{2,}/u.test(left);
  });
}
