-- An App's audience is its own (api/decision/apps.ts): the audience its tokens carry
-- (explicit, else its first url), compared as the decision point compares it (exactly).
-- The store writes it with the resource; the unique index makes two Apps of one audience
-- impossible, however their writes interleave. Apps that already share one keep their
-- records but none holds the audience (NULL here): the decision point lets an App decide
-- only while it holds its audience, and the first of them written again takes it.
ALTER TABLE apps ADD COLUMN audience text;
UPDATE apps SET audience = a.audience
  FROM (SELECT id, COALESCE(resource->>'audience', resource->'urls'->>0) AS audience FROM apps) a
  WHERE apps.id = a.id
    AND (SELECT count(*) FROM apps o WHERE COALESCE(o.resource->>'audience', o.resource->'urls'->>0) = a.audience) = 1;
CREATE UNIQUE INDEX apps_audience ON apps (audience);
