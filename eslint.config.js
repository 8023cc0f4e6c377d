// The project's lint rules (make lint runs them with tsc and prettier --check).
// typescript-eslint's recommended set, plus the type-aware rules that catch what
// review misses in this codebase: a promise nobody awaits (a lost error, or an
// answer sent before its commit), a switch that forgets a new case, a throw of
// something that is not an Error (no stack, no cause). And the floors (api/README.md):
// each folder imports only what its README says it may.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';
import { floorsRule, layersRule } from './eslint-floors.js';

// The floors (api/README.md): each folder's README says, in its "May import:" sentence, what
// its files may import, and eslint-floors.js reads those sentences into the rule `floors/readme`,
// so the rule and the READMEs cannot disagree. A folder without that sentence is refused until
// it is placed. `floors/layers` refuses, of what the READMEs allow, an import that climbs a floor
// (but a few of types) and every import circle.
//
export const floors = [
  {
    files: ['**/*.ts'],
    plugins: { floors: { rules: { readme: floorsRule(import.meta.dirname), layers: layersRule(import.meta.dirname) } } },
    rules: { 'floors/readme': 'error', 'floors/layers': 'error' },
  },
];

// make lint-changed names, in LINT_PROJECT, a project of the files it lints
// (scripts/lint-project.mjs): TypeScript loads what they import, the same types the whole tree
// gives them, without reading the rest. make lint leaves it unset: the project service, the tree.
const lintProject = process.env.LINT_PROJECT;
const typed = lintProject
  ? { project: lintProject, tsconfigRootDir: import.meta.dirname }
  : { projectService: true, tsconfigRootDir: import.meta.dirname };

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.boxauth/', 'charts/', 'api/ui/assets/', 'examples/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: typed },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/only-throw-error': 'error',
      '@typescript-eslint/prefer-promise-reject-errors': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      // Tests and the CLI talk to JSON over HTTP: `any` there is the honest type.
      '@typescript-eslint/no-explicit-any': 'off',
      'no-control-regex': 'off',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    files: ['bin/**/*.js', 'examples/**/*.mjs', 'eslint.config.js', 'eslint-floors.js'],
    languageOptions: { globals: { process: 'readonly', URL: 'readonly', console: 'readonly', fetch: 'readonly', setTimeout: 'readonly' } },
  },
  ...floors,
  prettier,
);
