// @jetfan/client: a handler for jetfan (see README.md). The wire codec is in "@jetfan/client/codec".
export { connect, Handler, type ConnectOptions, type ProcessOptions, type Ready } from "./handler.js";
export type { Message } from "./message.js";
export { MsgHeaders } from "./headers.js";
export { JetfanError, Nak, Term } from "./errors.js";
export { ProtocolError, ERROR_CODES, type ErrorCode, type ProtocolErrorCode } from "./codec.js";
