// STUB until helper LDAP's module lands (branch idp-ldap): the declared contract only.
import { UpstreamError, type LdapSettings, type UpstreamProfile } from './profile.js';

export async function ldapSignIn(
  _settings: LdapSettings,
  _bindPassword: string | undefined,
  _username: string,
  _password: string,
): Promise<UpstreamProfile> {
  throw new UpstreamError('unavailable', 'not built yet');
}
