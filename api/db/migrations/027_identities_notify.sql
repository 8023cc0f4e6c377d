-- What a policy knows about a person (request.user) includes their upstream identities, and the
-- API processes cache it with the person (api/people/principal.ts): a link made or undone, here or
-- through a provider removed (its links go by cascade), is a change of the person, announced as
-- a membership change is. A sign-in through a linked identity (last_used_at, email) is not.
CREATE TRIGGER upstream_identities_notify AFTER INSERT OR DELETE OR UPDATE OF provider, subject, user_id ON upstream_identities
  FOR EACH ROW EXECUTE FUNCTION boxauth_notify_membership();
