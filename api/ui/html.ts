// HTML with every interpolated value escaped, unless it is already Html.
export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escape(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Part = Html | string | number | null | undefined | false | Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return '';
  if (Array.isArray(part)) return part.map(render).join('');
  return part instanceof Html ? part.text : escape(part);
}

export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  return new Html(strings.reduce((out, s, i) => out + s + (i < values.length ? render(values[i]) : ''), ''));
}

/**
 * A name a third party chose (a client's, an app's, an identity provider's, a group's), isolated
 * (HTML's <bdi>, UAX #9's first-strong isolate): its direction is its own and changes nothing around
 * it. Unisolated, a right-to-left name drew the consent page's sentence around it right to left.
 * The doors refuse bidi controls in names (api/input.ts invisibleProblem); a name in Arabic or
 * Hebrew stays, and needs this as well.
 */
export const chosen = (name: Part): Html => html`<bdi>${name}</bdi>`;
