// The attributes of a person's entry the box reads from an LDAP directory, by an IdentityProvider's
// userSearch settings: the one place their defaults are written. They, and the entry's dn, are the
// claims an LDAP provider's group rules may name (crds/identityprovider.yaml).

export interface LdapAttributeSettings {
  idAttribute?: string;
  emailAttribute?: string;
  nameAttribute?: string;
}

/** The id, email and name attributes (entryUUID, mail and cn unless set). */
export function ldapAttributes(userSearch: LdapAttributeSettings): { id: string; email: string; name: string } {
  return { id: userSearch.idAttribute || 'entryUUID', email: userSearch.emailAttribute || 'mail', name: userSearch.nameAttribute || 'cn' };
}

/** The claims of an LDAP provider's profile: dn and the three attributes, named exactly as the settings name them. */
export function ldapClaimNames(userSearch: LdapAttributeSettings): string[] {
  const a = ldapAttributes(userSearch);
  return ['dn', a.id, a.email, a.name];
}
