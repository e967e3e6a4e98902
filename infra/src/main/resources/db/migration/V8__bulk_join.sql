-- A bulk membership change is one event: a 'join' that adds several users at once carries them
-- in users (in the order given; sender is the first of them) and their number in users_count.
-- Each of them has a period from this event's seq (memberships.from_seq). A single join or leave
-- keeps both NULL, as every event written before this migration. The CDC relay publishes users
-- on the event topic (routing learns every added user's period from it); the read path selects
-- only users_count, so a device reading the log never downloads the roster.
ALTER TABLE events ADD COLUMN users text[];
ALTER TABLE events ADD COLUMN users_count integer;
ALTER TABLE events ADD CONSTRAINT events_bulk_join CHECK (
    (users IS NULL AND users_count IS NULL)
    OR (kind = 'join' AND users_count >= 2 AND cardinality(users) = users_count AND users[1] = sender));
