-- unread_visible (V11) is replaced by the same sum written into the statements that use it
-- (ReadCursors.unreadVisible): as a SQL function holding an aggregate it could not be inlined and
-- ran apart for every conversation of a sub page (90 ms for 500 instead of 13).
DROP FUNCTION unread_visible(text, text, bigint, bigint);
