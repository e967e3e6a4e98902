-- The number of current members of each conversation, kept by the transactions that write join
-- and leave events (Directory), so that the IM_MAX_GROUP_MEMBERS check of an add reads one row
-- of the conversation it has locked anyway, not a count over its memberships.
ALTER TABLE conversations ADD COLUMN members integer NOT NULL DEFAULT 0 CHECK (members >= 0);
UPDATE conversations c SET members = (SELECT count(*) FROM memberships m WHERE m.conv_id = c.conv_id AND m.to_seq IS NULL);
