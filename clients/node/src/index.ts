// @jetfan/client: a handler for jetfan (see README.md). The wire codec is in "@jetfan/client/codec".
export { connect, Handler, type ConnectOptions, type ProcessOptions, type Ready } from "./handler.js";
export type { Message, Published, PublishData, PublishOptions, TiedPublishOptions } from "./message.js";
export { MsgHeaders, type PublishHeaders } from "./headers.js";
export { JetfanError, Nak, PublishError, Term } from "./errors.js";
export { ProtocolError, ERROR_CODES, type ErrorCode, type ProtocolErrorCode } from "./codec.js";
