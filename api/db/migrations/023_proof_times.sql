-- A session's proof is what it proved at its own time (docs/security.md#what-a-sign-in-proves).
--
-- A signed-in browser keeps the time of its sign-in (the ID token's auth_time, what max_age is
-- measured from) and the time of its last proof (a password or a factor the person gave: at the
-- sign-in, in a step-up, or on the account page's "confirm it is you"), which every credential
-- change asks to be recent. A step-up, a factor enrolled in the session and the session a
-- password change continues keep both, and its end: none of them is a sign-in. Rows of the
-- release before have neither: their created_at stands for both.
ALTER TABLE browser_sessions ADD COLUMN auth_time timestamptz, ADD COLUMN proof_at timestamptz;

-- A sign-in half made: when its last proof was given (a step-up's is its session's: enrolling
-- a factor there needs it recent), and whether a factor was enrolled in it rather than given.
ALTER TABLE sign_in_steps ADD COLUMN proof_at timestamptz, ADD COLUMN enrolled boolean NOT NULL DEFAULT false;

-- What a mail about a person's factors names (which factor), for its words; never a secret.
ALTER TABLE mail_outbox ADD COLUMN detail text;
