-- What makes two emails one account (api/input.ts emailKey: NFKC with full case folding)
-- is computed by the box, not here: PostgreSQL's lower() without a locale folds only A-Z,
-- and it has no case folding before version 18. The box fills the column at start
-- (api/store/users.ts backfillEmailKeys) and with every write; rows that would collide
-- with an older one keep NULL (logged at every start until an administrator resolves
-- them), so that an upgrade never fails on the people already there. users_email
-- (lower(email)) stays for the release before this one, serving beside it: every pair
-- it refuses, this index refuses too.
ALTER TABLE users ADD COLUMN email_key text;
CREATE UNIQUE INDEX users_email_key ON users (email_key);
