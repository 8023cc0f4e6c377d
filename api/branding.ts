// What a box's pages and mails show of the company that runs it (Box.spec.branding, the
// BOXAUTH_BRAND_* variables): a display name, a logo, colours and a support link. Every value is
// checked here before it is used, so that nothing written in a Box or an environment reaches a
// page's HTML or CSS unchecked; the pages escape it besides.
import { invisibleProblem } from './input.js';

export interface Branding {
  /** The name people see on the pages and as the mails' sender; undefined: "boxauth · <box>". */
  displayName: string | undefined;
  /** An https URL (http only on a loopback host) or a data: URI of an image, at most LOGO_DATA_MAX characters. */
  logoUrl: string | undefined;
  /** Buttons and links (#rrggbb); white text on it must keep WCAG's 4.5:1. */
  primaryColor: string | undefined;
  /** The page around the card (#rrggbb). */
  backgroundColor: string | undefined;
  /** Where a person finds help: an https URL (http only on a loopback host) or a mailto: address. */
  supportUrl: string | undefined;
}

export const NO_BRANDING: Branding = {
  displayName: undefined,
  logoUrl: undefined,
  primaryColor: undefined,
  backgroundColor: undefined,
  supportUrl: undefined,
};

export const DISPLAY_NAME_MAX = 64;
export const URL_MAX = 2048;
/** A logo inlined as a data: URI: 32 KiB of base64 holds a small PNG or SVG, and keeps every page light. */
export const LOGO_DATA_MAX = 32768;

export const COLOR = /^#[0-9a-fA-F]{6}$/;
const LOGO_DATA = /^data:image\/(png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/]+={0,2}$/;
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;
/**
 * A host as a URL parser leaves it: a DNS name (IDNs in punycode), an IPv4 address or a bracketed
 * IPv6 one. WHATWG URL takes `*`, `;`, `'`, `"` and `,` in a host, and the logo's origin goes into
 * the pages' Content-Security-Policy: `https://*` there allows images of every host, a `;` ends
 * img-src and begins another directive.
 */
const PLAIN_HOST = /^([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]*[a-z0-9])?\.?$|^\[[0-9a-f:.]+\]$/;

/**
 * WCAG 2.x contrast ratio of two #rrggbb colours (relative luminance, §1.4.3's formula): the
 * buttons write white on the primary colour, and the links write it on the white card.
 */
export function contrastRatio(a: string, b: string): number {
  const luminance = (hex: string): number => {
    const [r, g, b] = [1, 3, 5].map((i) => {
      const c = parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    }) as [number, number, number];
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** Why `value` is no web address the pages may point at, or undefined: https, or http on this machine only. */
function webUrlProblem(value: string): string | undefined {
  if (value.length > URL_MAX) return `is longer than ${URL_MAX} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.username || url.password) return 'must not hold a user or password';
  if (!PLAIN_HOST.test(url.hostname)) return 'must name its host with letters, digits, dots and hyphens only';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && LOOPBACK.test(url.hostname)) return undefined;
  return 'must be an https URL (http only for localhost)';
}

/** Each field's problem, by field name: an empty object is a good branding. */
export function brandingProblems(b: Branding): Partial<Record<keyof Branding, string>> {
  const problems: Partial<Record<keyof Branding, string>> = {};
  if (b.displayName !== undefined) {
    const invisible = invisibleProblem(b.displayName);
    if (invisible) problems.displayName = invisible;
    else if (b.displayName.trim() !== b.displayName || !b.displayName)
      problems.displayName = 'must not be empty or begin or end with a space';
    else if ([...b.displayName].length > DISPLAY_NAME_MAX) problems.displayName = `must be at most ${DISPLAY_NAME_MAX} characters`;
  }
  if (b.logoUrl !== undefined) {
    if (b.logoUrl.startsWith('data:')) {
      if (b.logoUrl.length > LOGO_DATA_MAX) problems.logoUrl = `is a data: URI longer than ${LOGO_DATA_MAX} characters`;
      else if (!LOGO_DATA.test(b.logoUrl)) problems.logoUrl = 'must be a base64 data: URI of a PNG, JPEG, GIF, WebP or SVG image';
    } else {
      const problem = webUrlProblem(b.logoUrl);
      if (problem) problems.logoUrl = problem;
    }
  }
  for (const name of ['primaryColor', 'backgroundColor'] as const) {
    const colour = b[name];
    if (colour !== undefined && !COLOR.test(colour)) problems[name] = 'must be a colour written #rrggbb';
  }
  if (!problems.primaryColor && b.primaryColor !== undefined && contrastRatio(b.primaryColor, '#ffffff') < 4.5)
    problems.primaryColor = `has a contrast of ${contrastRatio(b.primaryColor, '#ffffff').toFixed(2)}:1 with white; buttons and links need 4.5:1 (WCAG 1.4.3): pick a darker colour`;
  if (b.supportUrl !== undefined) {
    const problem = /^mailto:[^\s@/?#]+@[^\s@/?#]+$/.test(b.supportUrl) ? undefined : webUrlProblem(b.supportUrl);
    if (problem) problems.supportUrl = `${problem}, or a mailto: address`;
  }
  return problems;
}

/**
 * What the pages' Content-Security-Policy must add to `img-src 'self'` for the logo: exactly its
 * origin (never a wildcard), `data:` for an inlined one, nothing without a logo.
 */
export function logoSource(b: Pick<Branding, 'logoUrl'>): string | undefined {
  if (b.logoUrl === undefined) return undefined;
  return b.logoUrl.startsWith('data:') ? 'data:' : new URL(b.logoUrl).origin;
}

/** The stylesheet of the box's colours (/assets/brand.css), from checked #rrggbb values only. */
export function brandStylesheet(b: Pick<Branding, 'primaryColor' | 'backgroundColor'>): string {
  const lines = [
    ...(b.primaryColor && COLOR.test(b.primaryColor) ? [`  --accent: ${b.primaryColor};`] : []),
    ...(b.backgroundColor && COLOR.test(b.backgroundColor) ? [`  --bg: ${b.backgroundColor};`] : []),
  ];
  return `/* The box's colours (Box.spec.branding, BOXAUTH_BRAND_*). */\n:root {\n${lines.join('\n')}\n}\n`;
}
