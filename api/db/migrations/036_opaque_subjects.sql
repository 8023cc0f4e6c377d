-- Subjects that say nothing (OpenID Connect Core §8; api/credentials/subjects.ts): every person gets
-- an opaque stable id, a random UUID made with the row, which a public `sub` may be instead of the
-- row id (that tells a client how many people the box has) and which a pairwise `sub` enciphers.
-- Rows the release before adds get theirs from the DEFAULT, as the existing ones do here.
ALTER TABLE users ADD COLUMN subject uuid NOT NULL DEFAULT gen_random_uuid();
CREATE UNIQUE INDEX users_subject ON users (subject);

-- What public subs are on this box, unless BOXAUTH_PUBLIC_SUBJECTS says: a box that had people
-- when it met this release keeps handing out their row ids, which its clients already rely on;
-- a box without any begins with opaque ones. Recorded once; never changed by a release.
INSERT INTO box_settings (name, value)
  SELECT 'public_subjects', CASE WHEN EXISTS (SELECT 1 FROM users) THEN 'sequential' ELSE 'opaque' END
  ON CONFLICT (name) DO NOTHING;
