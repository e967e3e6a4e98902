// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
export { ImClient } from './client.js';
export { MemoryStorage, asciiLower } from './storage.js';
export { ImError, Limits, RETRIABLE, CLOSES, checkBody, parseServerFrame } from './protocol.js';
