// The values a mail's placeholders take: words of the box (a link, a number), or a name someone
// chose, which render() (./templates.ts) isolates. Apart from the templates so that the kinds of
// mail (./kinds.ts), which the templates are checked against, can name them too.

/**
 * A value that is a name someone chose — a person's address, a passkey's name, an identity
 * provider's — alone, or within `words` (the language's phrase around it, holding {{name}}).
 */
export interface Named {
  name: string;
  words?: string;
}

export const named = (name: string, words?: string): Named => (words === undefined ? { name } : { name, words });

/** A placeholder's value: words of the box (a link, a number), or a name. */
export type MailValue = string | Named;
