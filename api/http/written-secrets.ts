// The body of a write as the policies see it: as sent, but with every secret it writes read as
// `true` (docs/architecture.md §12: "Secrets written are visible to policies as written (`true`), never as
// values"). Cutting a secret out instead hid it: a policy that allowed `{"active": …}` alone on
// PUT /users/<id> also allowed `{"active": …, "password": …}`, which it never saw.
//
// A field that names a secret reads `true` whatever its value (null and "" too): the policy
// decides whether the request may write that secret at all, and a value the write would refuse
// is refused after the policy in any case. A field that is absent stays absent.

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** The secret fields of the REST bodies: a Client's and an IdentityProvider's `secret`, a person's `password`. */
const REST_SECRETS = ['secret', 'password'];

/**
 * SCIM names a person's password `password` in any case (RFC 7643 §2.1: attribute names are
 * case-insensitive), or by its full path (RFC 7644 §3.10) under the core User schema's URN.
 */
const SCIM_PASSWORD = /^(urn:ietf:params:scim:schemas:core:2\.0:user:)?password$/i;

/** `body` with each top-level field `isSecret` names read as `name(field): true`. */
function secretsAsTrue(body: Json, isSecret: (field: string) => boolean, name: (field: string) => string): Json {
  const out: Json = {};
  for (const [field, value] of Object.entries(body)) {
    if (isSecret(field)) out[name(field)] = true;
    else out[field] = value;
  }
  return out;
}

/** A SCIM attribute (or path) that names the password reads as `password`, however it was spelled. */
const scimPassword = (body: Json): Json =>
  secretsAsTrue(
    body,
    (field) => SCIM_PASSWORD.test(field),
    () => 'password',
  );

/**
 * One PATCH operation (RFC 7644 §3.5.2): a `path` naming the password reads `password` and its
 * value `true`; an operation without one carries attributes (or paths) as its value's keys.
 */
function scimOperation(operation: unknown): unknown {
  if (!isObject(operation)) return operation;
  const out: Json = {};
  const namesPassword = Object.entries(operation).some(
    ([k, v]) => k.toLowerCase() === 'path' && typeof v === 'string' && SCIM_PASSWORD.test(v),
  );
  for (const [field, value] of Object.entries(operation)) {
    const key = field.toLowerCase();
    if (key === 'path' && namesPassword) out[field] = 'password';
    else if (key === 'value' && namesPassword) out[field] = true;
    else if (key === 'value' && isObject(value)) out[field] = scimPassword(value);
    else out[field] = value;
  }
  return out;
}

/** A SCIM body: a resource written (POST, PUT) or a PatchOp message, its `Operations` in any case. */
function scimBody(body: Json): Json {
  const out = scimPassword(body);
  for (const [field, value] of Object.entries(out)) {
    if (field.toLowerCase() === 'operations' && Array.isArray(value)) out[field] = value.map(scimOperation);
  }
  return out;
}

/** A Shared Signals stream (api/ssf/): the push endpoint's `delivery.authorization_header` is the receiver's secret. */
function ssfBody(body: Json): Json {
  const delivery = body.delivery;
  if (!isObject(delivery) || !('authorization_header' in delivery)) return body;
  return { ...body, delivery: { ...delivery, authorization_header: true } };
}

/**
 * The body a policy sees of a write to `route` (the first segment of the matched route's pattern:
 * `users`, `Client`, `IdentityProvider`, `scim`…): every secret written read as `true`.
 */
export function bodyAsPoliciesSee(route: string, body: unknown): unknown {
  if (!isObject(body)) return body;
  if (route === 'scim') return scimBody(body);
  if (route === 'ssf') return ssfBody(body);
  // Another case of a REST field is no field (422 after the policy), yet its value is no more the policy's to see.
  return secretsAsTrue(
    body,
    (field) => REST_SECRETS.includes(field.toLowerCase()),
    (field) => field,
  );
}
