-- The platform's schema. Ids follow the wire protocol's id pattern (protocol/Limits).
-- Every change goes through a new migration file; applied ones are never edited.

CREATE TABLE users (
    user_id      text PRIMARY KEY CHECK (user_id ~ '^[A-Za-z0-9._:-]{1,64}$'),
    display_name text NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- A device of a user. install_epoch grows by one each time the device is registered again
-- (reinstalled); its token is bound to (user, device, epoch) and stored only as a SHA-256 hash.
CREATE TABLE devices (
    device_id     text PRIMARY KEY CHECK (device_id ~ '^[A-Za-z0-9._:-]{1,64}$'),
    user_id       text NOT NULL REFERENCES users,
    install_epoch integer NOT NULL DEFAULT 1 CHECK (install_epoch >= 1),
    token_hash    bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    updated_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX devices_by_user ON devices (user_id);
CREATE UNIQUE INDEX devices_by_token ON devices (token_hash);

-- Tokens of earlier installs, kept so that an old token is answered STALE_INSTALL rather than BAD_TOKEN.
CREATE TABLE device_installs (
    device_id     text NOT NULL REFERENCES devices,
    install_epoch integer NOT NULL,
    token_hash    bytea NOT NULL,
    retired_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (device_id, install_epoch)
);
CREATE UNIQUE INDEX device_installs_by_token ON device_installs (token_hash);

-- head_seq is the highest seq allocated in the conversation (0 = empty); the next event gets
-- head_seq + 1. The UPDATE that allocates it is also the per-conversation lock of a send.
CREATE TABLE conversations (
    conv_id    text PRIMARY KEY CHECK (conv_id ~ '^[A-Za-z0-9._:-]{1,64}$'),
    kind       text NOT NULL CHECK (kind IN ('direct', 'group')),
    head_seq   bigint NOT NULL DEFAULT 0 CHECK (head_seq >= 0),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Visibility periods: a member sees the events with from_seq <= seq <= to_seq, where from_seq is
-- the seq of their join event and to_seq the seq of their leave event (NULL while a member).
CREATE TABLE memberships (
    conv_id  text NOT NULL REFERENCES conversations,
    user_id  text NOT NULL REFERENCES users,
    from_seq bigint NOT NULL CHECK (from_seq >= 1),
    to_seq   bigint CHECK (to_seq IS NULL OR to_seq >= from_seq),
    PRIMARY KEY (conv_id, user_id, from_seq)
);
CREATE UNIQUE INDEX memberships_current ON memberships (conv_id, user_id) WHERE to_seq IS NULL;
CREATE INDEX memberships_by_user ON memberships (user_id, conv_id);

-- The conversation log. Messages and membership changes share one gap-free seq per conversation.
-- For join/leave, sender is the member who joined or left and cmid is NULL.
CREATE TABLE events (
    conv_id       text NOT NULL REFERENCES conversations,
    seq           bigint NOT NULL CHECK (seq >= 1),
    kind          text NOT NULL CHECK (kind IN ('msg', 'join', 'leave')),
    mid           uuid NOT NULL UNIQUE,
    sender        text NOT NULL REFERENCES users,
    sender_device text,
    cmid          text,
    body          text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (conv_id, seq),
    CONSTRAINT events_sender_cmid UNIQUE (sender, cmid),
    CONSTRAINT events_msg_has_cmid CHECK ((kind = 'msg') = (cmid IS NOT NULL))
);

-- Exactly the seed's table: one number per (device, conversation), never a row per message.
CREATE TABLE device_cursors (
    device_id     text NOT NULL REFERENCES devices,
    conv_id       text NOT NULL REFERENCES conversations,
    install_epoch integer NOT NULL,
    delivered_seq bigint NOT NULL CHECK (delivered_seq >= 0),
    updated_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (device_id, conv_id)
);
