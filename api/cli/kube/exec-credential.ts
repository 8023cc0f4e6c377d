// What kubectl and a credential plugin say to each other (client-go's exec
// authenticator): kubectl describes the call in KUBERNETES_EXEC_INFO, the plugin
// answers an ExecCredential on stdout. kubectl keeps the token in memory until
// expirationTimestamp, then runs the plugin again.
export const EXEC_API_VERSION = 'client.authentication.k8s.io/v1';
const KNOWN_VERSIONS = [EXEC_API_VERSION, 'client.authentication.k8s.io/v1beta1'];

export interface ExecInfo {
  /** The version kubectl expects the answer in (the kubeconfig's exec.apiVersion). */
  apiVersion: string;
  /** Whether a person is there to sign in (kubectl: interactiveMode and a terminal on stdin). */
  interactive: boolean;
}

/**
 * The call as kubectl describes it. Without KUBERNETES_EXEC_INFO a person ran
 * the command by hand, so they are there to sign in.
 */
export function execInfo(env: NodeJS.ProcessEnv): ExecInfo {
  const raw = env.KUBERNETES_EXEC_INFO;
  if (!raw) return { apiVersion: EXEC_API_VERSION, interactive: true };
  let info: { apiVersion?: unknown; spec?: { interactive?: unknown } };
  try {
    info = JSON.parse(raw) as typeof info;
  } catch (err) {
    throw new Error('KUBERNETES_EXEC_INFO is not JSON', { cause: err });
  }
  const apiVersion = typeof info.apiVersion === 'string' && KNOWN_VERSIONS.includes(info.apiVersion) ? info.apiVersion : EXEC_API_VERSION;
  return { apiVersion, interactive: info.spec?.interactive === true };
}

/** RFC 3339 without fractions: what every client-go release parses. */
export const rfc3339 = (epochSeconds: number): string => new Date(epochSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

export function execCredential(apiVersion: string, token: string, expiresAt: number) {
  return {
    apiVersion,
    kind: 'ExecCredential',
    status: { token, expirationTimestamp: rfc3339(expiresAt) },
  };
}
