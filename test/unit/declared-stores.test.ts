// Each grant, and each way in of api/people/ways/, declares everything it does to the database as
// one interface beside it (fosite's storage interfaces), wired once: what it imports of api/store/,
// of the closing of grants, of the pool and of the group-commit writers appears in that wiring and
// nowhere else in the file, so the interface is the whole contract and nobody must read api/store/
// to know it. A transaction it opens is the store's too (store.withTransaction).
import { readFileSync } from 'node:fs';
import { expect } from 'chai';

const FLOWS = [
  'api/oauth/grants/authorization-code.ts',
  'api/oauth/grants/client-credentials.ts',
  'api/oauth/grants/device-code.ts',
  'api/oauth/grants/refresh-token.ts',
  'api/oauth/grants/token-exchange.ts',
  'api/oauth/authorization-response.ts',
  'api/people/ways/password.ts',
  'api/people/ways/passkey.ts',
  'api/people/ways/app-codes.ts',
  'api/people/ways/email-code.ts',
  'api/people/ways/enrolment.ts',
  'api/people/ways/recovery-code.ts',
];

/** The values (not types) a file imports from the modules that reach the database. */
function databaseImports(text: string): string[] {
  const names: string[] = [];
  for (const m of text.matchAll(/import \{([^}]*)\} from '[./]+(?:store\/[a-z-]+|credentials\/closing|db\/pool)\.js';/g)) {
    // An error class (ConstraintViolation) is what a store member throws, not a way to the database.
    for (const name of m[1]!.split(',').map((n) => n.trim()))
      if (name && !name.startsWith('type ') && !/^[A-Z]/.test(name)) names.push(name);
  }
  return names;
}

describe('the store each grant and each way in declares', function () {
  for (const file of FLOWS) {
    it(`${file}: one interface, wired once, and nothing else reaches the database`, function () {
      const text = readFileSync(file, 'utf8');
      const declared = [...text.matchAll(/^export interface (\w+Store) \{/gm)].map((m) => m[1]);
      expect(declared, 'one store interface').to.have.length(1);
      const contract = new RegExp(`^export interface ${declared[0]} \\{[\\s\\S]*?^\\}$`, 'm').exec(text);
      const wiring = new RegExp(`^const store: ${declared[0]} = \\{[\\s\\S]*?\\};$`, 'm').exec(text);
      expect(wiring, 'its wiring: const store').to.not.equal(null);
      // What is left, without its comments: the flow, which reaches the database only as store.<member>.
      const flow = text
        .replace(contract![0], '')
        .replace(wiring![0], '')
        .replace(/^import [\s\S]*?;$/gm, '')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/\/\/.*$/gm, '');
      for (const name of databaseImports(text)) {
        expect(flow, `${name} used outside the store`).to.not.match(new RegExp(`(?<![.\\w])${name}\\b`));
      }
      expect(flow, 'a writer used outside the store').to.not.match(/svc\.(sessionWriter|refreshWriter|refreshReader)/);
      expect(flow, 'a transaction opened outside the store').to.not.match(/(?<!store\s*\.)\bwithTransaction\b/);
    });
  }
});
