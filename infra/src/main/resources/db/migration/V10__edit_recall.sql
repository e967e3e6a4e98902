-- Edit and recall (docs/protocol.md, "Edit and recall"). Both are events of the conversation's
-- log, sent by the message's sender with a cmid of their own (idempotent like a send), and refer
-- to the message they change by its seq (ref_seq, always below their own seq):
--   edit:   body is the message's new text. The message keeps its original body; every edit is
--           its own event, so the log holds the message's history in order.
--   recall: body is ''. The transaction that appends it also empties the body of the message and
--           of every edit of it, and sets their recalled_by to the recall's seq. That UPDATE is
--           the only change to a committed event: the CDC relay publishes nothing for it (the
--           recall event itself is on the event topic).
-- Neither counts as a message: msg_no does not move, own_no stays NULL (unread counts ignore them).
ALTER TABLE events DROP CONSTRAINT events_kind_check;
ALTER TABLE events ADD CONSTRAINT events_kind_check CHECK (kind IN ('msg', 'join', 'leave', 'edit', 'recall'));
ALTER TABLE events DROP CONSTRAINT events_msg_has_cmid;
ALTER TABLE events ADD CONSTRAINT events_sent_has_cmid CHECK ((kind IN ('msg', 'edit', 'recall')) = (cmid IS NOT NULL));
ALTER TABLE events ADD COLUMN ref_seq bigint;
ALTER TABLE events ADD CONSTRAINT events_change_has_ref CHECK (
    (kind IN ('edit', 'recall')) = (ref_seq IS NOT NULL) AND (ref_seq IS NULL OR (ref_seq >= 1 AND ref_seq < seq)));
ALTER TABLE events ADD COLUMN recalled_by bigint;
ALTER TABLE events ADD CONSTRAINT events_recalled CHECK (
    recalled_by IS NULL OR (kind IN ('msg', 'edit') AND recalled_by > seq AND body = ''));
-- The edits of a message (emptied with it by a recall), and its recall.
CREATE INDEX events_ref ON events (conv_id, ref_seq) WHERE ref_seq IS NOT NULL;
