// `boxauth kube-login setup`: the two halves of signing in to a cluster with box
// users, as text to paste or save. kubectl's half is a kubeconfig user whose exec
// plugin is `boxauth kube-login`; the API server's half is a `jwt` authenticator
// of its structured AuthenticationConfiguration (GA, apiserver.config.k8s.io/v1,
// since Kubernetes 1.34) that trusts the box as an issuer.
import { stringify } from 'yaml';
import { EXEC_API_VERSION } from './exec-credential.js';

export const AUTH_CONFIG_API_VERSION = 'apiserver.config.k8s.io/v1';

export interface Setup {
  box: string;
  client: string;
  /** Absolute path, and the PEM it holds. */
  caFile?: string;
  caPem?: string;
  /** The kubeconfig user's name. */
  name: string;
  /** More arguments for the plugin (--device, --scope …). */
  extraArgs: string[];
}

export const pluginArgs = (s: Setup): string[] => [
  'kube-login',
  `--box=${s.box}`,
  `--client=${s.client}`,
  ...(s.caFile ? [`--ca-file=${s.caFile}`] : []),
  ...s.extraArgs,
];

export function kubeconfigUsers(s: Setup) {
  return {
    users: [
      {
        name: s.name,
        user: {
          exec: {
            apiVersion: EXEC_API_VERSION,
            command: 'boxauth',
            args: pluginArgs(s),
            // A person at a terminal signs in when needed; scripts fail fast with a message instead.
            interactiveMode: 'IfAvailable',
            provideClusterInfo: false,
          },
        },
      },
    ],
  };
}

/** Users are their box email, groups their box group names, each without a prefix. */
export function authenticationConfiguration(s: Setup) {
  return {
    apiVersion: AUTH_CONFIG_API_VERSION,
    kind: 'AuthenticationConfiguration',
    jwt: [
      {
        issuer: { url: s.box, ...(s.caPem ? { certificateAuthority: s.caPem } : {}), audiences: [s.client] },
        claimMappings: { username: { claim: 'email', prefix: '' }, groups: { claim: 'groups', prefix: '' } },
      },
    ],
  };
}

export const shellQuote = (word: string): string => (/^[\w./:=@%+,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

export function setCredentialsCommand(s: Setup): string {
  return [
    'kubectl config set-credentials',
    shellQuote(s.name),
    `--exec-api-version=${EXEC_API_VERSION}`,
    '--exec-command=boxauth',
    ...pluginArgs(s).map((a) => shellQuote(`--exec-arg=${a}`)),
    '--exec-interactive-mode=IfAvailable',
  ].join(' ');
}

const comment = (text: string): string =>
  text
    .split('\n')
    .map((line) => (line ? `# ${line}` : '#'))
    .join('\n');

/** Both halves as one YAML stream (the instructions as comments), or one of them alone, ready to save. */
export function setupText(s: Setup, only?: 'user' | 'auth-config'): string {
  if (only === 'user') return stringify(kubeconfigUsers(s));
  if (only === 'auth-config') return stringify(authenticationConfiguration(s));
  return [
    comment(`boxauth kube-login setup: box ${s.box}, client ${s.client}

1. kubectl: a kubeconfig user that signs in with \`boxauth kube-login\` (the entry
   below; or let kubectl write it), and a context that uses it:

   ${setCredentialsCommand(s)}
   kubectl config set-context --current --user=${shellQuote(s.name)}
`),
    stringify(kubeconfigUsers(s)).trimEnd(),
    '---',
    comment(`2. kube-apiserver: save this document (\`boxauth kube-login setup … --only auth-config\`)
   and start kube-apiserver with --authentication-config=<file> (make kube-up:
   BOXAUTH_KUBE_AUTH_CONFIG=<file>). A user is named by their email, and the API server
   takes it only when email_verified is true (the box says so of addresses an administrator
   entered); groups are box group names: bind them with RBAC.
`),
    stringify(authenticationConfiguration(s)),
  ].join('\n');
}
