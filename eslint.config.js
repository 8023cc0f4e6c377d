// The project's lint rules (make lint runs them with tsc and prettier --check).
// typescript-eslint's recommended set, plus the type-aware rules that catch what
// review misses in this codebase: a promise nobody awaits (a lost error, or an
// answer sent before its commit), a switch that forgets a new case, a throw of
// something that is not an Error (no stack, no cause). And the floors of api/
// (api/README.md): each folder imports only the floors below it.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

// The floors of api/ (api/README.md), top to bottom. A folder may import its own
// floor's code and the floors below it, never above: `floors` forbids, for each
// folder, the relative imports that climb (or cross to a peer). Imports are relative,
// so a pattern is `./` or `../…/` and then a top folder of api/ (api/cli/kube/ is the
// one subfolder that shares a top folder's name, and cli may import api/kube/ anyway).
const ROOT = ['main.js', 'server.js', 'services.js', 'bootstrap.js'];
const DOORS = ['http', 'grpc', 'ui', 'cli'];
const PEERS = ['oauth', 'decision', 'people', 'jobs'];
// `./` or `../…/`, then one of `targets` (regexes: a folder with its slash, or a file)
const climbing = (targets) => `^(\\./|(\\.\\./)+)(${targets.join('|')})`;
const forbid = (folders, files = ROOT) => [
  {
    regex: climbing(folders.map((f) => (f.includes('/') ? f : `${f}/`))),
    message: 'a floor of api/ imports only the floors below it (api/README.md)',
  },
  {
    regex: `${climbing(files.map((f) => f.replace('.', '\\.')))}$`,
    message: 'only the composition root (api/README.md) imports main, server, services or bootstrap',
  },
  { regex: '^(\\.\\./)+operator/', message: 'api/ never imports operator/' },
];
const floor = (files, patterns, ignores = []) => ({ files, ignores, rules: { 'no-restricted-imports': ['error', { patterns }] } });
const BELOW_STORE = ['store', 'cache', 'policy', 'credentials', 'mail', ...PEERS, ...DOORS];
export const floors = [
  // the base: config, errors, input, log, types… (types.ts re-exports schema/'s generated types)
  floor(['api/*.ts'], forbid(['db', 'kube', 'docs', ...BELOW_STORE]), [
    'api/main.ts',
    'api/server.ts',
    'api/services.ts',
    'api/bootstrap.ts',
  ]),
  floor(['api/db/**/*.ts', 'api/kube/**/*.ts', 'api/schema/**/*.ts', 'api/docs/**/*.ts'], forbid(BELOW_STORE)),
  floor(['api/store/**/*.ts'], forbid(BELOW_STORE.filter((f) => f !== 'store'))),
  floor(['api/cache/**/*.ts'], forbid(['policy', 'credentials', 'mail', ...PEERS, ...DOORS])),
  floor(['api/policy/**/*.ts'], forbid(['credentials', 'mail', ...PEERS, ...DOORS])),
  floor(['api/credentials/**/*.ts'], forbid(['mail', ...PEERS, ...DOORS])),
  // mail: the outbox's sender, between what makes a link and the people who ask for one
  floor(['api/mail/**/*.ts'], forbid(['cache', 'policy', ...PEERS, ...DOORS])),
  // peers: none imports another; people/sign-in.ts is what people tell the authorization server
  floor(['api/oauth/**/*.ts'], forbid(['decision', 'jobs', 'people/(?!sign-in\\.js$)', ...DOORS])),
  floor(['api/decision/**/*.ts'], forbid(['oauth', 'people', 'jobs', ...DOORS])),
  floor(['api/people/**/*.ts'], forbid(['oauth', 'decision', 'jobs', ...DOORS])),
  floor(['api/jobs/**/*.ts'], forbid(['oauth', 'decision', 'people', ...DOORS])),
  // the doors: pages render what they are told; the CLI speaks to a box over HTTP
  floor(['api/ui/**/*.ts'], forbid([...PEERS, 'http', 'grpc', 'cli'])),
  floor(['api/cli/**/*.ts'], forbid([...PEERS, 'http', 'grpc'])),
  floor(['api/grpc/**/*.ts'], forbid(['cli'])),
  floor(['api/http/**/*.ts'], forbid(['cli']), ['api/http/app.ts']),
  // http/app.ts wires every router, so it takes the whole of Services
  floor(
    ['api/http/app.ts'],
    forbid(
      ['cli'],
      ROOT.filter((f) => f !== 'services.js'),
    ),
  ),
];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.boxauth/', 'charts/', 'api/ui/assets/', 'examples/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
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
    files: ['bin/**/*.js', 'examples/**/*.mjs', 'eslint.config.js'],
    languageOptions: { globals: { process: 'readonly', URL: 'readonly', console: 'readonly', fetch: 'readonly', setTimeout: 'readonly' } },
  },
  ...floors,
  prettier,
);
