// Which media type a request's Accept header prefers among those the box can answer with
// (RFC 9110 §12.5.1). Pure, so its rules are tested alone.

interface MediaRange {
  type: string;
  subtype: string;
  q: number;
  /** Its place in the header: the earlier wins a tie. */
  order: number;
}

function mediaRanges(accept: string): MediaRange[] {
  return accept.split(',').flatMap((part, order) => {
    const [range = '', ...params] = part.trim().split(';');
    const slash = range.indexOf('/');
    if (slash <= 0 || slash === range.length - 1) return [];
    const qParam = params.map((p) => p.trim()).find((p) => /^q=/i.test(p));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!Number.isFinite(q) || q < 0 || q > 1) return [];
    return [
      {
        type: range.slice(0, slash).trim().toLowerCase(),
        subtype: range
          .slice(slash + 1)
          .trim()
          .toLowerCase(),
        q,
        order,
      },
    ];
  });
}

/** How specifically `range` names `type/subtype`: 2 outright, 1 by type/*, 0 by *\/*; -1 not at all. */
function specificity(range: MediaRange, type: string, subtype: string): number {
  if (range.type === '*' && range.subtype === '*') return 0;
  if (range.type !== type) return -1;
  if (range.subtype === '*') return 1;
  return range.subtype === subtype ? 2 : -1;
}

/**
 * The one of `offered` that `accept` prefers: the highest weight, then the most specific range,
 * then the earliest in the header, then the earliest offered. With no header, the first offered;
 * false if the header takes none of them. RFC 9110 §12.5.1: "Media ranges can be overridden by
 * more specific media ranges or specific media types".
 */
export function preferredMediaType(accept: string | undefined, offered: readonly string[]): string | false {
  if (accept === undefined) return offered[0] ?? false;
  const ranges = mediaRanges(accept);
  let best: { type: string; q: number; s: number; order: number; index: number } | undefined;
  offered.forEach((candidate, index) => {
    const [type = '', subtype = ''] = candidate.toLowerCase().split('/');
    let match: { q: number; s: number; order: number } | undefined;
    for (const range of ranges) {
      const s = specificity(range, type, subtype);
      if (s < 0) continue;
      if (!match || s > match.s || (s === match.s && (range.q > match.q || (range.q === match.q && range.order < match.order))))
        match = { q: range.q, s, order: range.order };
    }
    if (!match || match.q === 0) return;
    if (!best || match.q > best.q || (match.q === best.q && (match.s > best.s || (match.s === best.s && match.order < best.order))))
      best = { type: candidate, ...match, index };
  });
  return best ? best.type : false;
}
