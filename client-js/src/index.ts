export { ImClient, type ClientOptions, type SentResult, type ClientEvents, type ConnectionState, type ConversationSummary, type Identity, type EventSource, type SocketLike, type WebSocketCtor } from './client.js';
export { MemoryStorage, asciiLower, type Storage, type StoreOp, type Loaded, type ConvRecord, type PageQuery, type SearchQuery, type OutboxEntry, type FailedEntry } from './storage.js';
export { ImError, Limits, RETRIABLE, CLOSES, checkBody, parseServerFrame, type Event, type ErrorCode, type ServerFrame, type ClientFrame, type ConvState } from './protocol.js';
