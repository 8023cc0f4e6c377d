// The kinds of second factor, gathered from their ways: each api/people/ways/<way>.ts that is a
// factor a person enrols declares `export const FACTOR_KIND = { … } as const satisfies
// FactorKindSpec` (api/factor-kinds.ts says what it holds), and this copies every declaration, in
// the order of their `position`, into api/factor-kinds-declared.ts, which the base reads (the base
// may import no floor, so it cannot read the ways themselves). `make generate` runs it before it
// compiles anything: a new way's kind is known to the type checker from the start. A unit test
// fails while the file is stale.
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';
import ts from 'typescript';

export const WAYS = 'api/people/ways';
export const DECLARED = 'api/factor-kinds-declared.ts';

/** The object literal of a `FACTOR_KIND` declaration, under its `as const` and `satisfies`. */
function literalOf(expression) {
  let e = expression;
  while (ts.isAsExpression(e) || ts.isSatisfiesExpression(e) || ts.isParenthesizedExpression(e)) e = e.expression;
  return ts.isObjectLiteralExpression(e) ? e : undefined;
}

/** A property's value in `literal` by its name, as text. */
function valueOf(literal, name) {
  const found = literal.properties.find((p) => ts.isPropertyAssignment(p) && p.name.getText() === name);
  return found && found.initializer;
}

/** Every factor kind the ways of the repository at `root` declare: its name, position, the literal's text and its file. */
export function declaredKinds(root) {
  const dir = path.join(root, WAYS);
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .sort()
    .flatMap((file) => {
      const source = ts.createSourceFile(file, fs.readFileSync(path.join(dir, file), 'utf8'), ts.ScriptTarget.Latest, true);
      return source.statements.flatMap((statement) => {
        if (!ts.isVariableStatement(statement)) return [];
        if (!statement.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) return [];
        return statement.declarationList.declarations.flatMap((d) => {
          if (d.name.getText() !== 'FACTOR_KIND' || !d.initializer) return [];
          const literal = literalOf(d.initializer);
          const kind = literal && valueOf(literal, 'kind');
          const position = literal && valueOf(literal, 'position');
          if (!literal || !kind || !ts.isStringLiteral(kind) || !position || !ts.isNumericLiteral(position))
            throw new Error(`${WAYS}/${file}: FACTOR_KIND must be an object literal with a string kind and a number position`);
          return [{ kind: kind.text, position: Number(position.text), text: literal.getText(), file: `${WAYS}/${file}` }];
        });
      });
    })
    .sort((a, b) => a.position - b.position || a.kind.localeCompare(b.kind));
}

/** The text of api/factor-kinds-declared.ts for the ways of the repository at `root`, as prettier writes it. */
export async function declaredKindsFile(root) {
  const kinds = declaredKinds(root);
  const entries = kinds.map((k) => `  // ${k.file}\n  ${JSON.stringify(k.kind)}: ${k.text.replace(/\n/g, '\n  ')},`);
  const text = `// Written by \`make generate\` (scripts/write-factor-kinds.mjs) from the FACTOR_KIND of each way of
// ${WAYS}/: do not edit. What each field says: FactorKindSpec in ./factor-kinds.ts.
export const DECLARED_FACTOR_KINDS = {
${entries.join('\n')}
} as const;
`;
  const filepath = path.join(root, DECLARED);
  return prettier.format(text, { ...(await prettier.resolveConfig(filepath)), filepath });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
  fs.writeFileSync(path.join(root, DECLARED), await declaredKindsFile(root));
}
