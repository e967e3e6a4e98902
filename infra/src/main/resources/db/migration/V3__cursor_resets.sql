-- Cursor changes reach <prefix>cursors from the cursor service, which publishes each one before
-- the transaction that writes it commits (docs/architecture.md, "Cursor records"); they no longer
-- go through CDC. A reinstall's removal of the device's cursors is the one cursor change made
-- outside the cursor service: the reinstall's transaction records it here, one row per
-- conversation the device had a cursor in, and the CDC relay publishes each inserted row as a
-- deletion record ({"deleted":true,"epoch":<new epoch>}). Nothing reads this table back; rows may
-- be deleted once the relay has published them (deletes are not published).
CREATE TABLE cursor_resets (
    device_id     text NOT NULL REFERENCES devices,
    conv_id       text NOT NULL REFERENCES conversations,
    install_epoch integer NOT NULL CHECK (install_epoch >= 1),   -- the epoch the device moved to
    reset_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (device_id, conv_id, install_epoch)
);
