-- A gateway finds the devices whose credentials changed since its last look (CredentialWatch:
-- a reinstall, a token renewal or a revocation each set devices.updated_at) by this index,
-- rather than reading every held device once a second. It replaces the index of V4, which only
-- saw reinstalls.
CREATE INDEX devices_by_updated_at ON devices (updated_at);
DROP INDEX device_installs_by_retired_at;
