// Generated from client-js/src by `cd client-js && npm run build:web`; do not edit (npm test checks it).
export {};
