-- A kept refusal holds a bounded excerpt of its request (api/decision/excerpt.ts), and here
-- what the excerpt cut: `boxauth explain` shows an excerpt as one and never replays it as the
-- request. Rows written before hold their request whole: nothing cut.
ALTER TABLE decisions ADD COLUMN cut jsonb NOT NULL DEFAULT '[]';
