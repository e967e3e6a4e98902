-- A gateway finds the installs retired since its last look (InstallWatch) by this index instead of
-- reading the install epoch of every device it holds once a second.
CREATE INDEX device_installs_by_retired_at ON device_installs (retired_at);
