// YAML as the box reads it (resource bodies, and the CLI's manifests), in time
// linear in its size. The yaml package refuses a duplicate key by comparing each
// key of a mapping with every key before it: a body of 37,000 keys (255 KiB) held
// the process for 35 s. So documents are composed without that check, and the
// keys of each mapping are checked here against a Set.
//
// Even linear, yaml spends microseconds on every token (a key, a value, an
// indicator, a space, a line break): with limits, the tokens are counted before
// anything is composed, so a body costs at most that many tokens' work.
import { errorMessage } from './errors.js';
import { CST, isScalar, LineCounter, Lexer, parseAllDocuments, visit, type Document } from 'yaml';

export class YamlError extends Error {
  constructor(
    message: string,
    /** Why: not YAML (or a key given twice), more tokens than allowed, or nested deeper than allowed. */
    readonly reason: 'malformed' | 'too-many-tokens' | 'too-deep' = 'malformed',
  ) {
    super(message);
  }
}

export interface YamlLimits {
  /** Tokens of the text, as yaml's lexer cuts it. */
  tokens: number;
  /** Nesting of flow collections ([…], {…}); block nesting is bounded by the tokens its indentation takes. */
  flowDepth: number;
}

/** Aliases a document may expand (a "billion laughs" body is refused, as yaml's toJS does by default). */
const MAX_ALIAS_COUNT = 100;

function checkLimits(text: string, limits: YamlLimits): void {
  let tokens = 0;
  let depth = 0;
  let previous: string | undefined;
  for (const token of new Lexer().lex(text)) {
    if (++tokens > limits.tokens) throw new YamlError(`more than ${limits.tokens} YAML tokens`, 'too-many-tokens');
    // The lexer announces a scalar (plain or block) before its text: that text is never an indicator.
    const type = previous === CST.SCALAR ? undefined : CST.tokenType(token);
    if (type === 'flow-map-start' || type === 'flow-seq-start') {
      if (++depth > limits.flowDepth) throw new YamlError(`nested deeper than ${limits.flowDepth} levels`, 'too-deep');
    } else if (type === 'flow-map-end' || type === 'flow-seq-end') {
      depth--;
    }
    previous = token;
  }
}

/** YAML 1.2 §3.2.1.1: "the content of a mapping node is an unordered set of key/value node pairs, with the restriction that each of the keys is unique". */
function checkUniqueKeys(doc: Document, lines: LineCounter): void {
  visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        // As yaml compares keys: scalars by value, other nodes by identity.
        const identity = isScalar(key) ? key.value : key;
        if (seen.has(identity)) {
          const offset = (key as { range?: [number] } | null)?.range?.[0] ?? map.range?.[0] ?? 0;
          const { line, col } = lines.linePos(offset);
          throw new YamlError(`Map keys must be unique at line ${line}, column ${col}`);
        }
        seen.add(identity);
      }
    },
  });
}

/** yaml recurses per level of nesting: a document nested thousands deep exhausts the stack (yaml reports V8's RangeError as a parse error). */
const overflowed = (err: unknown): boolean => err instanceof RangeError || errorMessage(err).includes('Maximum call stack');

const firstLine = (err: unknown): string => errorMessage(err).split('\n')[0]!;

const tooDeep = (): YamlError => new YamlError('nested too deep to read', 'too-deep');

/**
 * The documents of `text` as plain values. Throws YamlError when it is not YAML,
 * a mapping holds a key twice, or it exceeds `limits` (checked before it is parsed).
 */
export function readYaml(text: string, limits?: YamlLimits): unknown[] {
  try {
    if (limits) checkLimits(text, limits);
    const lines = new LineCounter();
    const docs = parseAllDocuments(text, { lineCounter: lines, uniqueKeys: false });
    return Array.from(docs, (doc) => {
      const [error] = doc.errors;
      if (error) throw overflowed(error) ? tooDeep() : new YamlError(firstLine(error));
      checkUniqueKeys(doc, lines);
      return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) as unknown;
    });
  } catch (err) {
    if (err instanceof YamlError) throw err;
    if (overflowed(err)) throw tooDeep();
    // toJS refuses too many aliases with an Error of its own.
    throw new YamlError(firstLine(err));
  }
}
