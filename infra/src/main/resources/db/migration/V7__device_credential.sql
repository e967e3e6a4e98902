-- Which credential of a device's install a session holds: 0 for the token issued with the
-- install, one more at every renewal, revocation or reinstall. Every request (send, sync, sub,
-- ack) compares its session's number with this in its own transaction, so a session whose token
-- was renewed or revoked is refused from the commit on, not only once CredentialWatch closes it.
ALTER TABLE devices ADD COLUMN credential bigint NOT NULL DEFAULT 0;
