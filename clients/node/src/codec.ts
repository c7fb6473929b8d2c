// The jetfan handler protocol, versions 1 to 3 (proto/PROTOCOL.md): an incremental parser for what
// jetfan sends and the encoders for what a handler sends. Pure: no I/O, no timers. The conformance vectors
// in proto/vectors/ pin its behaviour byte for byte to the C++ codec.

/**
 * The highest protocol version this client speaks (it speaks every one from 1 up). Version 2 adds
 * the publish time, subject and server's count to MSG; version 3 adds the delivery's traceparent to
 * MSG, lets a NAK carry a reason, and adds PUB (a handler's publish through jetfan) and its answers,
 * PUBOK and PUBERR.
 */
export const PROTOCOL_VERSION = 3;
/** Limits of the protocol (PROTOCOL.md, "Limits"). */
export const MAX_COMMAND_LINE = 1024; // handler -> jetfan, with the line end
export const MAX_FRAME_LINE = 16384; // jetfan -> handler, with the line end
export const MAX_BODY = 64 * 1024 * 1024; // headers + payload of one MSG or PUB
const MAX_SMALL_NUMBER = 1_000_000; // READY's version and max-unconfirmed

/** Why a stream was rejected: the same stable codes as every other jetfan codec (PROTOCOL.md). */
export const ERROR_CODES = [
  "line-too-long",
  "empty-line",
  "unknown-verb",
  "missing-argument",
  "too-many-arguments",
  "bad-number",
  "header-exceeds-total",
  "body-too-large",
  "bad-body-end",
  "bad-traceparent",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];
/**
 * A ProtocolError's code: one of the parser's, or "unexpected-frame" for a well-formed frame that
 * the client did not expect where it came (a PUBOK or PUBERR answering no PUB that waits).
 */
export type ProtocolErrorCode = ErrorCode | "unexpected-frame";

/**
 * Bytes from jetfan that break the protocol, or a frame the client did not expect. The stream cannot
 * be used after it.
 */
export class ProtocolError extends Error {
  override name = "ProtocolError";
  constructor(
    readonly code: ProtocolErrorCode,
    message: string,
  ) {
    super(`${message} (${code})`);
  }
}

export interface ReadyFrame {
  type: "READY";
  version: number;
  handler: string;
  maxUnconfirmed: number;
  patterns: string[];
}

/**
 * An unsigned 64-bit protocol number, exact: a number when it is at most 2^53 - 1 (always, in
 * practice), else a bigint.
 */
export type U64 = number | bigint;

/** One delivery. Headers and payload are views of the bytes read, not copies. */
export interface MsgFrame {
  type: "MSG";
  id: U64;
  key: string;
  seq: U64;
  /** The deliveries of the message to this handler, this one included: 1 the first time. */
  deliveries: U64;
  headers: Buffer;
  payload: Buffer;
  /** Version 2 on: when JetStream stored it, in nanoseconds since 1970 (UTC); 0 when unknown and in version 1. */
  published: U64;
  /** Version 2 on: its full NATS subject; "" in version 1. */
  subject: string;
  /** Version 2 on: how often JetStream has delivered it to jetfan (1 the first time); 0 in version 1. */
  serverDeliveries: U64;
  /**
   * Version 3 on: the W3C traceparent of jetfan's span of this delivery; undefined for "-" (jetfan
   * does not trace it) and before version 3.
   */
  traceparent: string | undefined;
}

export interface ErrFrame {
  type: "ERR";
  reason: string;
}

/**
 * Version 3 on: JetStream stored the PUB with request id `id`, in `stream` at `seq`. `duplicate`: the
 * stream already held a message with its Nats-Msg-Id, whose sequence `seq` then is.
 */
export interface PubOkFrame {
  type: "PUBOK";
  id: U64;
  stream: string;
  seq: U64;
  duplicate: boolean;
}

/**
 * Version 3 on: the PUB with request id `id` was not stored, or jetfan does not know that it was.
 * `code` says why (PROTOCOL.md, "Publishing": not-allowed, bad-subject, ..., timeout, server-down),
 * kept as it came when this client does not know it; `reason` says it for people ("" for none).
 */
export interface PubErrFrame {
  type: "PUBERR";
  id: U64;
  code: string;
  reason: string;
}

export type Frame = ReadyFrame | MsgFrame | ErrFrame | PubOkFrame | PubErrFrame | { type: "PING" } | { type: "PONG" };

const NEWLINE = 0x0a;
const CR = 0x0d;

// Splits a control line (latin-1, one char per byte) at runs of spaces and tabs.
function splitWords(line: string): string[] {
  const words: string[] = [];
  let at = 0;
  const n = line.length;
  while (at < n) {
    let c = line.charCodeAt(at);
    while (at < n && (c === 0x20 || c === 0x09)) c = line.charCodeAt(++at);
    const start = at;
    while (at < n && c !== 0x20 && c !== 0x09) c = line.charCodeAt(++at);
    if (at > start) words.push(line.slice(start, at));
  }
  return words;
}

// Where word `index` (0: the verb) of a line starts (the line has more than `index` words).
function wordStart(line: string, index: number): number {
  let at = 0;
  const blank = (i: number) => line.charCodeAt(i) === 0x20 || line.charCodeAt(i) === 0x09;
  while (blank(at)) ++at;
  for (let word = 0; word < index; ++word) {
    while (!blank(at)) ++at;
    while (blank(at)) ++at;
  }
  return at;
}

// A version 3 MSG's traceparent when it is not "-": the W3C shape, lowercase hex, 55 characters, version
// not ff, neither id all zeros.
const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

const U64_MAX = 18446744073709551615n;
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** An unsigned decimal of 1-20 digits that fits 64 bits, or undefined. */
export function parseU64(word: string): U64 | undefined {
  const n = word.length;
  if (n === 0 || n > 20) return undefined;
  for (let i = 0; i < n; ++i) {
    const c = word.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return undefined;
  }
  if (n <= 15) return Number(word); // below 2^53: exact as a number
  const value = BigInt(word);
  if (value > U64_MAX) return undefined;
  return value <= MAX_SAFE ? Number(value) : value;
}

// A word of the line as the bytes it was, read as UTF-8 (keys, names and reasons are UTF-8 text).
function text(latin1: string): string {
  for (let i = 0; i < latin1.length; ++i) {
    if (latin1.charCodeAt(i) > 0x7f) return Buffer.from(latin1, "latin1").toString("utf8");
  }
  return latin1;
}

// Decimal digits buf[start, end) as a number, or -1 if they are not 1-15 digits (then the general
// path decides).
function smallNumber(buf: Buffer, start: number, end: number): number {
  if (end - start > 15) return -1;
  let value = 0;
  for (let i = start; i < end; ++i) {
    const c = buf[i]!;
    if (c < 0x30 || c > 0x39) return -1;
    value = value * 10 + (c - 0x30);
  }
  return value;
}

// Up to `limit` characters of a word (an unknown verb, say), safe to print.
function shown(word: string, limit = 32): string {
  return word.slice(0, limit).replace(/[^\x20-\x7e]/g, "?");
}

/**
 * Parses what jetfan sends to a handler, incrementally: feed it whatever bytes arrived, in any
 * pieces. Not thread-safe (one per connection). After it throws, it throws the same error again.
 * MSG is read in the layout of the version the last READY announced (version 1 before any), and
 * PUBOK and PUBERR are verbs from version 3 on.
 */
export class FrameParser {
  #version = 1;
  #partial: Buffer[] = []; // the start of a control line whose end has not arrived
  #partialLength = 0;
  #failed: ProtocolError | undefined;
  // While a MSG body is being read: the frame so far, the body's parts, and how many bytes of the
  // body and its final "\r\n" are still to come.
  #msg: MsgFrame | undefined;
  #headerBytes = 0;
  #bodyParts: Buffer[] = [];
  #bodyLeft = 0;

  /** Appends every frame completed by `chunk` to `out`. Throws ProtocolError on bad bytes. */
  feed(chunk: Buffer, out: Frame[]): void {
    if (this.#failed) throw this.#failed;
    let at = 0;
    const end = chunk.length;
    while (at < end) {
      if (this.#msg) {
        at = this.#readBody(chunk, at, out);
        continue;
      }
      const newline = chunk.indexOf(NEWLINE, at);
      if (newline === -1) {
        if (this.#partialLength + (end - at) >= MAX_FRAME_LINE) this.#lineTooLong();
        this.#partial.push(chunk.subarray(at));
        this.#partialLength += end - at;
        return;
      }
      if (this.#partialLength + (newline - at) + 1 > MAX_FRAME_LINE) this.#lineTooLong();
      let lineEnd = newline;
      let line: string;
      if (this.#partialLength === 0) {
        if (lineEnd > at && chunk[lineEnd - 1] === CR) --lineEnd;
        if (this.#fastMsg(chunk, at, lineEnd)) {
          at = newline + 1;
          continue;
        }
        line = chunk.toString("latin1", at, lineEnd);
      } else {
        this.#partial.push(chunk.subarray(at, newline));
        const whole = Buffer.concat(this.#partial, this.#partialLength + (newline - at));
        this.#partial = [];
        this.#partialLength = 0;
        let wholeEnd = whole.length;
        if (wholeEnd > 0 && whole[wholeEnd - 1] === CR) --wholeEnd;
        line = whole.toString("latin1", 0, wholeEnd);
      }
      at = newline + 1;
      this.#parseLine(line, out);
    }
  }

  #fail(code: ErrorCode, message: string): never {
    this.#failed = new ProtocolError(code, message);
    throw this.#failed;
  }

  // PUBOK and PUBERR before a READY of version 3: unknown verbs, as in the C++ parser.
  #notYet(verb: string): never {
    this.#fail("unknown-verb", `unknown frame "${shown(verb)}" in protocol version ${this.#version} (PUBOK and PUBERR are version 3's)`);
  }

  #lineTooLong(): never {
    this.#fail("line-too-long", `control line from jetfan longer than ${MAX_FRAME_LINE} bytes`);
  }

  #readBody(chunk: Buffer, at: number, out: Frame[]): number {
    const left = this.#bodyLeft;
    if (this.#bodyParts.length === 0 && chunk.length - at >= left) {
      this.#finishBody(chunk, at, left - 2, out); // the common case: all of it in this read, no copy
      return at + left;
    }
    const take = Math.min(left, chunk.length - at);
    this.#bodyParts.push(chunk.subarray(at, at + take));
    this.#bodyLeft -= take;
    if (this.#bodyLeft === 0) {
      const body = Buffer.concat(this.#bodyParts);
      this.#bodyParts = [];
      this.#finishBody(body, 0, body.length - 2, out);
    }
    return at + take;
  }

  // The body is buf[start, start + total), then its "\r\n".
  #finishBody(buf: Buffer, start: number, total: number, out: Frame[]): void {
    const msg = this.#msg!;
    this.#msg = undefined;
    this.#bodyLeft = 0;
    if (buf[start + total] !== CR || buf[start + total + 1] !== NEWLINE) {
      this.#fail("bad-body-end", `MSG ${msg.id}: body of ${total} bytes not followed by \\r\\n`);
    }
    const headerEnd = start + this.#headerBytes;
    if (this.#headerBytes > 0) msg.headers = buf.subarray(start, headerEnd);
    msg.payload = buf.subarray(headerEnd, start + total);
    out.push(msg);
  }

  // The hot path: a well-formed "MSG " line read straight from the bytes, without a string per
  // word. Anything unusual (lower case, a big or bad number, an error) returns false, and the
  // general path parses the line, so both give the same frames and the same errors.
  #fastMsg(buf: Buffer, start: number, end: number): boolean {
    if (buf[start] !== 0x4d || buf[start + 1] !== 0x53 || buf[start + 2] !== 0x47 || buf[start + 3] !== 0x20) return false;
    const bounds = this.#bounds;
    const expected = this.#version >= 3 ? 11 : this.#version >= 2 ? 10 : 7;
    let words = 1;
    let i = start + 4;
    for (;;) {
      while (i < end && (buf[i] === 0x20 || buf[i] === 0x09)) ++i;
      if (i >= end) break;
      if (words === expected) return false;
      bounds[2 * words] = i;
      while (i < end && buf[i] !== 0x20 && buf[i] !== 0x09) ++i;
      bounds[2 * words + 1] = i;
      ++words;
    }
    if (words !== expected) return false;
    const id = smallNumber(buf, bounds[2]!, bounds[3]!);
    const seq = smallNumber(buf, bounds[6]!, bounds[7]!);
    const deliveries = smallNumber(buf, bounds[8]!, bounds[9]!);
    const headerBytes = smallNumber(buf, bounds[10]!, bounds[11]!);
    const totalBytes = smallNumber(buf, bounds[12]!, bounds[13]!);
    if (id < 0 || seq < 0 || deliveries < 0 || headerBytes < 0 || totalBytes < 0) return false;
    if (headerBytes > totalBytes || totalBytes > MAX_BODY) return false;
    let published: U64 = 0;
    let subject = "";
    let serverDeliveries: U64 = 0;
    let traceparent: string | undefined;
    if (expected >= 10) {
      // A publish time in nanoseconds is past 2^53: read as the general path reads it.
      const p = parseU64(buf.toString("latin1", bounds[14]!, bounds[15]!));
      if (p === undefined) return false;
      published = p;
      subject = buf.toString("utf8", bounds[16]!, bounds[17]!);
      serverDeliveries = smallNumber(buf, bounds[18]!, bounds[19]!);
      if (serverDeliveries < 0) return false;
    }
    if (expected === 11) {
      const word = buf.toString("latin1", bounds[20]!, bounds[21]!);
      if (word !== "-") {
        if (!TRACEPARENT.test(word)) return false;
        traceparent = word;
      }
    }
    const key = buf.toString("utf8", bounds[4]!, bounds[5]!);
    this.#msg = {
      type: "MSG",
      id,
      key,
      seq,
      deliveries,
      headers: EMPTY,
      payload: EMPTY,
      published,
      subject,
      serverDeliveries,
      traceparent,
    };
    this.#headerBytes = headerBytes;
    this.#bodyLeft = totalBytes + 2;
    return true;
  }
  #bounds = new Int32Array(22); // start and end of each word of a MSG line

  #parseLine(line: string, out: Frame[]): void {
    const words = splitWords(line);
    if (words.length === 0) this.#fail("empty-line", "empty line from jetfan");
    const verb = words[0]!.toUpperCase();
    switch (verb) {
      case "MSG": {
        const expected = this.#version >= 3 ? 11 : this.#version >= 2 ? 10 : 7;
        if (words.length !== expected) {
          this.#fail(
            words.length < expected ? "missing-argument" : "too-many-arguments",
            `MSG needs ${expected - 1} arguments in protocol version ${this.#version}, got ${words.length - 1}`,
          );
        }
        const published = expected >= 10 ? parseU64(words[7]!) : 0;
        const serverDeliveries = expected >= 10 ? parseU64(words[9]!) : 0;
        const id = parseU64(words[1]!);
        const seq = parseU64(words[3]!);
        const deliveries = parseU64(words[4]!);
        const headerBytes = parseU64(words[5]!);
        const totalBytes = parseU64(words[6]!);
        if (
          id === undefined ||
          seq === undefined ||
          deliveries === undefined ||
          headerBytes === undefined ||
          totalBytes === undefined ||
          published === undefined ||
          serverDeliveries === undefined
        ) {
          this.#fail("bad-number", `MSG: malformed number in "${shown(line)}"`);
        }
        if (headerBytes > totalBytes) this.#fail("header-exceeds-total", "MSG: header bytes exceed total bytes");
        if (totalBytes > MAX_BODY) this.#fail("body-too-large", `MSG: body larger than ${MAX_BODY} bytes`);
        let traceparent: string | undefined;
        if (expected === 11 && words[10] !== "-") {
          traceparent = words[10]!;
          if (!TRACEPARENT.test(traceparent)) {
            this.#fail(
              "bad-traceparent",
              `MSG: traceparent "${shown(traceparent, 64)}" is neither - nor a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)`,
            );
          }
        }
        const subject = expected >= 10 ? text(words[8]!) : "";
        this.#msg = {
          type: "MSG",
          id,
          key: text(words[2]!),
          seq,
          deliveries,
          headers: EMPTY,
          payload: EMPTY,
          published,
          subject,
          serverDeliveries,
          traceparent,
        };
        this.#headerBytes = Number(headerBytes);
        this.#bodyLeft = Number(totalBytes) + 2;
        return;
      }
      case "READY": {
        if (words.length < 5) this.#fail("missing-argument", "READY needs a version, a handler, a limit and patterns");
        const version = parseU64(words[1]!);
        const limit = parseU64(words[3]!);
        if (version === undefined || limit === undefined || version > MAX_SMALL_NUMBER || limit > MAX_SMALL_NUMBER) {
          this.#fail("bad-number", "READY: malformed number");
        }
        if (version > 0) this.#version = Number(version); // the MSGs after it are in this version
        out.push({
          type: "READY",
          version: Number(version),
          handler: text(words[2]!),
          maxUnconfirmed: Number(limit),
          patterns: words.slice(4).map(text),
        });
        return;
      }
      case "ERR": {
        // The reason is the rest of the line as written, from its first character.
        const reason = words.length > 1 ? line.slice(wordStart(line, 1)) : "";
        out.push({ type: "ERR", reason: text(reason) });
        return;
      }
      case "PING":
      case "PONG":
        if (words.length > 1) this.#fail("too-many-arguments", `${verb} takes no arguments`);
        out.push({ type: verb });
        return;
      case "PUBOK": {
        if (this.#version < 3) this.#notYet(words[0]!);
        if (words.length !== 5) {
          this.#fail(
            words.length < 5 ? "missing-argument" : "too-many-arguments",
            "PUBOK takes a request id, a stream, a sequence and 0 or 1",
          );
        }
        const id = parseU64(words[1]!);
        if (id === undefined) this.#fail("bad-number", `PUBOK: malformed request id in "${shown(line)}"`);
        const seq = parseU64(words[3]!);
        const duplicate = words[4]!;
        if (seq === undefined || (duplicate !== "0" && duplicate !== "1")) {
          this.#fail("bad-number", `PUBOK: malformed sequence or duplicate flag in "${shown(line)}"`);
        }
        out.push({ type: "PUBOK", id, stream: text(words[2]!), seq, duplicate: duplicate === "1" });
        return;
      }
      case "PUBERR": {
        if (this.#version < 3) this.#notYet(words[0]!);
        if (words.length < 3) this.#fail("missing-argument", "PUBERR takes a request id, a code and perhaps a reason");
        const id = parseU64(words[1]!);
        if (id === undefined) this.#fail("bad-number", `PUBERR: malformed request id in "${shown(line)}"`);
        // The reason is the rest of the line as written, from its first character, as ERR's.
        const reason = words.length > 3 ? line.slice(wordStart(line, 3)) : "";
        out.push({ type: "PUBERR", id, code: text(words[2]!), reason: text(reason) });
        return;
      }
      default:
        this.#fail("unknown-verb", `unknown frame "${shown(words[0]!)}"`);
    }
  }
}

const EMPTY = Buffer.alloc(0);

// ---- What a handler sends. Each returns one complete line, "\r\n" included (encodePub: its line and body). ----

/** A number as the protocol writes it; throws RangeError for what cannot be one. */
function decimal(value: number | bigint, what: string): string {
  if (typeof value === "bigint") {
    if (value < 0n || value > U64_MAX) throw new RangeError(`${what} out of range: ${value}`);
    return value.toString();
  }
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${what} must be a number >= 0, got ${value}`);
  return Math.round(value).toString();
}

/** `version` is the highest protocol version the handler speaks. */
export function encodeHello(handler: string, version: number = PROTOCOL_VERSION): string {
  if (!/^[^\s]+$/.test(handler)) throw new TypeError(`handler name must be one word, got "${handler}"`);
  return `HELLO ${handler} ${decimal(version, "protocol version")}\r\n`;
}

export function encodeAck(id: U64): string {
  return `ACK ${id}\r\n`;
}

/**
 * `NAK <id> [<delay-ms>]`, and from protocol version 3 on `NAK <id> <delay-ms>|- <reason>`.
 * `version` is the one the connection speaks (READY's; the latest by default): before version 3 the
 * reason is left out. The reason is written as encodeTerm writes it (one line, cut to fit 1024
 * bytes at a UTF-8 character boundary); an empty one is not written, nor then the "-".
 */
export function encodeNak(id: U64, delayMs?: number | bigint, reason = "", version: number = PROTOCOL_VERSION): string {
  let head = `NAK ${id}`;
  const withReason = version >= 3 && reason !== "";
  if (delayMs !== undefined) head += ` ${decimal(delayMs, "NAK delay")}`;
  else if (withReason) head += " -";
  return withReason ? withReasonLine(head, reason) : `${head}\r\n`;
}

/**
 * `TERM <id> [<reason>]`. Each \r or \n in the reason becomes a space, and a reason too long for
 * the 1024-byte line is cut to fit, never inside a UTF-8 character: jetfan would drop a connection
 * that sent a longer line.
 */
export function encodeTerm(id: U64, reason = ""): string {
  return withReasonLine(`TERM ${id}`, reason);
}

// `head`, then " <reason>" unless the reason is empty, then "\r\n". A NAK's and a TERM's reason alike:
// each \r or \n becomes a space, and the reason is cut, at a UTF-8 character boundary, so that the
// whole line fits MAX_COMMAND_LINE bytes (proto/encoder.cpp, append_reason_and_end).
function withReasonLine(head: string, reason: string): string {
  if (reason === "") return `${head}\r\n`;
  const oneLine = reason.replace(/[\r\n]/g, " ");
  const room = Math.max(0, MAX_COMMAND_LINE - head.length - 3); // ' ' and "\r\n"; the head is ASCII
  let kept = oneLine;
  if (Buffer.byteLength(oneLine, "utf8") > room) {
    const bytes = Buffer.from(oneLine, "utf8");
    let keep = room;
    while (keep > 0 && (bytes[keep]! & 0xc0) === 0x80) --keep;
    kept = bytes.toString("utf8", 0, keep);
  }
  return kept === "" ? `${head}\r\n` : `${head} ${kept}\r\n`;
}

export function encodeWip(id: U64): string {
  return `WIP ${id}\r\n`;
}

/**
 * Version 3 on: `PUB <id> <subject> <header-bytes> <total-bytes>[ <delivery-id> <index>]`, then the
 * body (the header block, "" or a NATS/1.0 block ending in a blank line, then the payload) and
 * "\r\n". The sizes count bytes; strings are written as UTF-8. With `tiedTo`, the publish is tied to
 * that delivery of this connection, as its `index`-th publish. The only encoder that returns bytes,
 * since the body may be any. Throws TypeError for a subject that is not one word, RangeError for a
 * number that is not a 64-bit one, a line longer than jetfan takes (1024 bytes) or a body over
 * MAX_BODY: jetfan would drop the connection. The subject itself is jetfan's to check.
 */
export function encodePub(
  id: U64,
  subject: string,
  headers: Uint8Array | string,
  payload: Uint8Array | string,
  tiedTo?: U64,
  index: U64 = 0,
): Buffer {
  if (!/^[^ \t\r\n]+$/.test(subject)) throw new TypeError(`PUB subject must be one word, got "${subject}"`);
  const headerBytes = typeof headers === "string" ? Buffer.from(headers, "utf8") : headers;
  const payloadBytes = typeof payload === "string" ? Buffer.from(payload, "utf8") : payload;
  const total = headerBytes.length + payloadBytes.length;
  if (total > MAX_BODY) throw new RangeError(`PUB body of ${total} bytes is over ${MAX_BODY} bytes`);
  let line = `PUB ${u64(id, "PUB request id")} ${subject} ${headerBytes.length} ${total}`;
  if (tiedTo !== undefined) line += ` ${u64(tiedTo, "PUB delivery id")} ${u64(index, "PUB index")}`;
  line += "\r\n";
  const lineBytes = Buffer.byteLength(line, "utf8");
  if (lineBytes > MAX_COMMAND_LINE) {
    throw new RangeError(`PUB line of ${lineBytes} bytes is longer than ${MAX_COMMAND_LINE} bytes (the subject is too long)`);
  }
  const out = Buffer.allocUnsafe(lineBytes + total + 2);
  let at = out.write(line, 0, "utf8");
  out.set(headerBytes, at);
  at += headerBytes.length;
  out.set(payloadBytes, at);
  at += payloadBytes.length;
  out[at] = CR;
  out[at + 1] = NEWLINE;
  return out;
}

// A request id, delivery id or index as the protocol writes it: an integer 0 to 2^64 - 1, else RangeError.
function u64(value: U64, what: string): string {
  if (typeof value === "bigint" ? value < 0n || value > U64_MAX : !Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`${what} must be an integer from 0 to 2^64 - 1, got ${value}`);
  }
  return value.toString();
}

export const PING_LINE = "PING\r\n";
export const PONG_LINE = "PONG\r\n";
