// Time in the operator: the formats the API server writes it in.

/** metav1.Time: RFC 3339 in whole seconds, as the API server stores it (a fraction would show up as a change). */
export function kubeTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** metav1.MicroTime (a Lease's acquireTime and renewTime): RFC 3339 with microseconds. */
export function kubeMicroTime(date: Date): string {
  return date.toISOString().replace(/Z$/, '000Z');
}
