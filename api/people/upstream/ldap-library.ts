// ldapts, some 1.5 MB of a process's heap and 4 MB of its memory: required at the first LDAP
// sign-in or check, never at the start (a box with no LDAP provider never loads it;
// test/integration/idle-modules.test.ts). From its CommonJS build, so that the filters are made
// synchronously; every use at run time goes through here, so an error's class is the one thrown.
import { createRequire } from 'node:module';

type Ldapts = typeof import('ldapts');

let ldapts: Ldapts | undefined;

export const ldap = (): Ldapts => (ldapts ??= createRequire(import.meta.url)('ldapts') as Ldapts);
