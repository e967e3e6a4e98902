-- The unread count of docs/protocol.md, "Read state and unread counts": the messages of others
-- the user may see with read < seq <= high, in every period of the user's membership (V9's
-- callers counted from the start of the last period only, so a leave and a rejoin dropped the
-- unread messages of the earlier period from the server's count, while the user's devices kept
-- counting them). One unread_between per period: four index probes each.
CREATE FUNCTION unread_visible(p_conv text, p_user text, p_read bigint, p_high bigint) RETURNS bigint
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(sum(unread_between(p_conv, p_user, GREATEST(p_read, m.from_seq - 1),
                                     LEAST(COALESCE(m.to_seq, p_high), p_high))), 0)::bigint
    FROM memberships m
   WHERE m.conv_id = p_conv AND m.user_id = p_user AND m.from_seq <= p_high
$$;
