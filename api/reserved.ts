// The records a box creates for itself at start-up (api/bootstrap.ts), listed in
// one place. The box depends on them: the root client and its policy are how an
// administrator gets in, the admin UI signs people in through its own client, and
// the admins group is what its policy allows. So the operator never adopts or
// writes one (Ready=False, ReservedName), the REST API refuses to delete them or
// to change what the box relies on, and bootstrap creates only what is missing.
export const ADMIN_CLIENT_ID = 'boxauth-admin';
export const ADMINS_GROUP = 'admins';

export interface ReservedRecords {
  Client: readonly string[];
  AccessPolicy: readonly string[];
  App: readonly string[];
  IdentityProvider: readonly string[];
  Webhook: readonly string[];
  Hook: readonly string[];
  Group: readonly string[];
}

/** The reserved ids of a box whose root client is `rootClientId`. */
export function reservedRecords(rootClientId: string): ReservedRecords {
  return {
    Client: [rootClientId, ADMIN_CLIENT_ID],
    AccessPolicy: [rootPolicyId(rootClientId), adminsPolicyId(), adminClientPolicyId()],
    App: [],
    IdentityProvider: [],
    Webhook: [],
    Hook: [],
    Group: [ADMINS_GROUP],
  };
}

export const rootPolicyId = (rootClientId: string): string => `${rootClientId}-allow`;
export const adminsPolicyId = (): string => `${ADMINS_GROUP}-allow`;
/** Lets the admin UI act for the person signed in to it (their own policies still decide what that is). */
export const adminClientPolicyId = (): string => `${ADMIN_CLIENT_ID}-allow`;

export function isReserved(records: ReservedRecords, kind: keyof ReservedRecords, id: string): boolean {
  return records[kind].includes(id);
}
