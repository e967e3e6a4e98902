-- Read state (docs/protocol.md, "Read state and unread counts"). A user's unread count in a
-- conversation is the messages of others it may see above its read cursor, counted in O(1) from
-- two running counts each event carries, set by the statement that writes it:
--   msg_no: the conversation's messages (kind 'msg') with seq <= this event's, on every event
--           (the previous event's msg_no, plus one for a message);
--   own_no: on a message, its sender's messages in the conversation with seq <= this one.
-- unread_between() below is the one place that counts with them.
ALTER TABLE events ADD COLUMN msg_no bigint CHECK (msg_no >= 0);
ALTER TABLE events ADD COLUMN own_no bigint CHECK (own_no >= 1);
UPDATE events e SET msg_no = x.msg_no, own_no = x.own_no
  FROM (SELECT conv_id, seq,
               count(*) FILTER (WHERE kind = 'msg') OVER (PARTITION BY conv_id ORDER BY seq) AS msg_no,
               CASE WHEN kind = 'msg'
                    THEN count(*) FILTER (WHERE kind = 'msg') OVER (PARTITION BY conv_id, sender ORDER BY seq) END AS own_no
          FROM events) x
 WHERE e.conv_id = x.conv_id AND e.seq = x.seq;
-- The user's last message at or below a seq, with its own_no, from the index alone.
CREATE INDEX events_own ON events (conv_id, sender, seq) INCLUDE (own_no) WHERE kind = 'msg';

-- The messages of users other than p_user with p_low < seq <= p_high in p_conv: every message
-- in the range less the user's own, each a difference of two running counts (two primary-key
-- probes, two probes of events_own). 0 when the range is empty.
CREATE FUNCTION unread_between(p_conv text, p_user text, p_low bigint, p_high bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN p_high <= p_low THEN 0::bigint ELSE
      (SELECT msg_no FROM events WHERE conv_id = p_conv AND seq = p_high)
    - COALESCE((SELECT msg_no FROM events WHERE conv_id = p_conv AND seq = p_low), 0)
    - COALESCE((SELECT own_no FROM events WHERE conv_id = p_conv AND sender = p_user AND kind = 'msg' AND seq <= p_high
                ORDER BY seq DESC LIMIT 1), 0)
    + COALESCE((SELECT own_no FROM events WHERE conv_id = p_conv AND sender = p_user AND kind = 'msg' AND seq <= p_low
                ORDER BY seq DESC LIMIT 1), 0)
  END
$$;

-- The read cursor of a user in a conversation: the user has read every event with seq <= read_seq.
-- Only moves up (GREATEST), never above the head the user may see. No row: nothing read (0).
CREATE TABLE read_cursors (
    user_id    text NOT NULL REFERENCES users,
    conv_id    text NOT NULL REFERENCES conversations,
    read_seq   bigint NOT NULL CHECK (read_seq >= 0),
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (user_id, conv_id)
);
