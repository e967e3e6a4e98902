-- Device tokens expire. token_expires_at is set from IM_TOKEN_TTL_S whenever a token is issued
-- (registration, reinstall, renewal); NULL means the token never expires (IM_TOKEN_TTL_S=0, or a
-- token issued before this migration). An expired token is answered BAD_TOKEN.
ALTER TABLE devices ADD COLUMN token_expires_at timestamptz;
