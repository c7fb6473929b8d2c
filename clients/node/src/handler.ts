// A handler's connection to jetfan: says HELLO, hands out deliveries, writes confirmations, answers
// PING, and reconnects when jetfan restarts. One Handler per declared handler name per process is
// the usual shape; several are fine (each is one connection, and jetfan balances between them).

import { EventEmitter } from "node:events";
import { connect as netConnect, type Socket } from "node:net";

import {
  FrameParser,
  ProtocolError,
  PROTOCOL_VERSION,
  encodeHello,
  encodePub,
  PONG_LINE,
  type Frame,
  type PubErrFrame,
  type PubOkFrame,
  type ReadyFrame,
  type U64,
} from "./codec.js";
import { JetfanError, Nak, PublishError, Term } from "./errors.js";
import { headerBlock, type PublishHeaders } from "./headers.js";
import { Delivery, type Link, type Message, type PublishData, type PublishOptions, type Published } from "./message.js";

/** What jetfan announced in READY. */
export interface Ready {
  version: number;
  handler: string;
  /** How many deliveries may be unconfirmed at once on this connection; jetfan never sends more. */
  maxUnconfirmed: number;
  patterns: string[];
}

export interface ConnectOptions {
  /** Path of jetfan's Unix socket (socket.path in its config). */
  socket: string;
  /** A handler name declared in jetfan's config. */
  handler: string;
  /** Aborting it closes the handler as close() does. */
  signal?: AbortSignal;
  /** Reconnect when jetfan closes the connection or restarts (not after ERR). Default true. */
  reconnect?: boolean;
  /** Delay before the first reconnect attempt; it doubles with each failed one. Default 100. */
  reconnectDelayMs?: number;
  /** The cap of that delay. Default 5000. */
  maxReconnectDelayMs?: number;
  /** How long connect() keeps trying while the socket is missing or refuses. Default 10000. */
  connectTimeoutMs?: number;
  /** How long close() waits for messages handed out to be confirmed. Default 10000. */
  closeTimeoutMs?: number;
  /** Where reconnects and failed callbacks are reported. Default: a line on stderr. */
  log?: (line: string) => void;
  /**
   * The highest protocol version to ask for (PROTOCOL.md, "Version negotiation"): 1 to 3, default 3.
   * jetfan answers with the highest both speak (jetfan 0.1.0: 2); a jetfan that speaks only version
   * 1 refuses a higher one, and the client connects again at once asking for 1. ready.version says
   * which one the connection speaks: from 2 on, messages have published, subject and
   * serverDeliveries; from 3 on, traceparent (when jetfan traces the delivery), and a nak()'s reason
   * is sent.
   */
  protocolVersion?: number;
}

export interface ProcessOptions {
  /** How many callbacks may run at once. Default 1. */
  concurrency?: number;
}

const HANDSHAKE_TIMEOUT_MS = 10_000;

// A PUB sent and not yet answered.
interface Waiting {
  resolve: (published: Published) => void;
  reject: (error: PublishError) => void;
  subject: string;
}

// One socket, from HELLO to close. Deliveries keep a reference to the connection they came on, so
// a confirmation can never reach a later connection, nor a tied publish.
class Connection implements Link {
  alive = true;
  ending = false; // close() has ended the socket: nothing more is written
  // PUBs sent and not yet answered, by request id. Ids count up from 1 per connection: one is never
  // reused while its PUB waits (jetfan would answer busy-id).
  readonly publishes = new Map<number, Waiting>();
  #nextRequest = 1;
  ready: Ready | undefined;
  handedOut = 0; // handed to the app and not yet confirmed
  paused = false;
  onSettled: (() => void) | undefined;
  refusal: string | undefined; // the reason of an ERR
  broken: ProtocolError | undefined;
  lastError: Error | undefined;
  readonly parser = new FrameParser();
  readonly closed: Promise<void>;
  // Lines waiting for this turn's write. A fresh buffer per write: the socket may still hold the
  // last one.
  #out: Buffer | undefined;
  #outLength = 0;
  #flushQueued = false;
  #markClosed!: () => void;

  constructor(
    readonly socket: Socket,
    readonly socketPath: string,
  ) {
    this.closed = new Promise((resolve) => (this.#markClosed = resolve));
  }

  /** The protocol version this connection speaks: its READY's (deliveries come only after it). */
  get version(): number {
    return this.ready?.version ?? 1;
  }

  send(line: string): void {
    if (!this.alive) return;
    const out = this.#room(line.length * 3); // the most UTF-8 bytes it can take
    let at = this.#outLength;
    for (let i = 0; i < line.length; ++i) {
      const c = line.charCodeAt(i);
      if (c > 0x7f) {
        at = this.#outLength + out.write(line, this.#outLength, "utf8"); // not ASCII: a TERM or NAK reason
        break;
      }
      out[at++] = c;
    }
    this.#outLength = at;
    this.#queueFlush();
  }

  /**
   * Sends a PUB (tied to delivery `tiedTo` as its `index`-th publish, if given) with this turn's
   * other lines; resolves with its PUBOK, rejects with PublishError for its PUBERR or when the
   * connection closes first ("connection-lost"). Refused without sending: a closed connection
   * ("not-connected", or "not-in-flight" for a tied publish: its message is stale), one before
   * protocol version 3 ("unsupported"), and what encodePub and headerBlock throw for.
   */
  publish(subject: string, data: PublishData, headers: PublishHeaders | undefined, tiedTo?: U64, index?: number): Promise<Published> {
    let pub: Buffer;
    try {
      if (!this.alive || this.ending) {
        const error =
          tiedTo === undefined
            ? new PublishError("not-connected", "no connection to jetfan is open", subject, this.socketPath)
            : new PublishError("not-in-flight", "the message is stale: its connection has closed, and jetfan redelivers it", subject, this.socketPath);
        const refused = Promise.reject(error);
        if (tiedTo !== undefined) refused.catch(() => {}); // the redelivery publishes again (Message.publish)
        return refused;
      }
      if (this.version < 3) {
        throw new PublishError(
          "unsupported",
          `this connection speaks protocol version ${this.version}, and publishing needs version 3 (a newer jetfan, and protocolVersion 3)`,
          subject,
          this.socketPath,
        );
      }
      pub = encodePub(this.#nextRequest, subject, headers === undefined ? "" : headerBlock(headers), data, tiedTo, index);
    } catch (error) {
      return Promise.reject(error);
    }
    const id = this.#nextRequest++;
    const answer = new Promise<Published>((resolve, reject) => this.publishes.set(id, { resolve, reject, subject }));
    // jetfan acts on a tied publish's failure itself (Message.publish): one nobody awaits is no
    // unhandled rejection.
    if (tiedTo !== undefined) answer.catch(() => {});
    this.#room(pub.length).set(pub, this.#outLength);
    this.#outLength += pub.length;
    this.#queueFlush();
    if (this.paused) {
      // Its answer may come after MSGs the app has not taken: read on. jetfan sends no more MSGs
      // than maxUnconfirmed, so the queue stays bounded all the same.
      this.paused = false;
      this.socket.resume();
    }
    return answer;
  }

  /** Settles the PUB `frame` answers; false if no PUB of this connection waits for it. */
  answer(frame: PubOkFrame | PubErrFrame): boolean {
    const id = typeof frame.id === "number" ? frame.id : -1; // a bigint is past every id this client gives
    const waiting = this.publishes.get(id);
    if (!waiting) return false;
    this.publishes.delete(id);
    if (frame.type === "PUBOK") waiting.resolve({ stream: frame.stream, seq: Number(frame.seq), duplicate: frame.duplicate });
    else waiting.reject(new PublishError(frame.code, frame.reason, waiting.subject, this.socketPath));
    this.onSettled?.();
    return true;
  }

  // The write buffer with room for `bytes` more.
  #room(bytes: number): Buffer {
    if (!this.#out || this.#outLength + bytes > this.#out.length) {
      const bigger = Buffer.allocUnsafe(Math.max(4096, 2 * (this.#outLength + bytes)));
      this.#out?.copy(bigger, 0, 0, this.#outLength);
      this.#out = bigger;
    }
    return this.#out;
  }

  #queueFlush(): void {
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      setImmediate(() => this.flush()); // every line of this turn goes out in one write
    }
  }

  taken(): void {
    ++this.handedOut;
  }

  settled(): void {
    --this.handedOut;
    this.onSettled?.();
  }

  flush(): void {
    this.#flushQueued = false;
    if (this.#out && this.#outLength > 0 && this.alive && !this.ending) this.socket.write(this.#out.subarray(0, this.#outLength));
    this.#out = undefined;
    this.#outLength = 0;
  }

  markClosed(): void {
    this.alive = false;
    // What was sent may have been stored, or not: jetfan's answer is lost with the connection.
    for (const waiting of this.publishes.values()) {
      waiting.reject(
        new PublishError("connection-lost", "the connection to jetfan closed before its answer: it may or may not be stored", waiting.subject, this.socketPath),
      );
    }
    this.publishes.clear();
    this.#markClosed();
  }
}

/**
 * A connected handler. Take messages with `for await (const msg of handler)` or with process();
 * one of the two at a time. Emits "connect" (Ready) after every READY, including reconnects, and
 * "disconnect" (Error | undefined) when a connection closes.
 */
export class Handler extends EventEmitter implements AsyncIterable<Message> {
  readonly socketPath: string;
  readonly name: string;
  readonly #options: Required<Omit<ConnectOptions, "signal">>;
  #conn: Connection | undefined;
  #ready!: Ready;
  #queue: Delivery[] = []; // received on #conn, not yet handed out
  #head = 0;
  #wake: (() => void) | undefined;
  #consumer: "iterator" | "process" | undefined;
  #closing = false;
  #loopLeft = false; // a for-await loop ended: what it has handed out is not waited for
  #failure: Error | undefined; // ERR or a broken stream: ends everything
  #reconnectTimer: NodeJS.Timeout | undefined;
  #closeDone: Promise<void> | undefined;
  #finishClose: (() => void) | undefined;

  /** Use connect(): a Handler made with new is not connected. */
  constructor(options: ConnectOptions) {
    super();
    this.socketPath = options.socket;
    this.name = options.handler;
    encodeHello(options.handler); // a name that cannot be sent is a TypeError now, not later
    const protocolVersion = options.protocolVersion ?? PROTOCOL_VERSION;
    if (!Number.isInteger(protocolVersion) || protocolVersion < 1 || protocolVersion > PROTOCOL_VERSION) {
      throw new RangeError(`protocolVersion must be one this client speaks, 1 to ${PROTOCOL_VERSION}, got ${protocolVersion}`);
    }
    this.#options = {
      socket: options.socket,
      handler: options.handler,
      reconnect: options.reconnect ?? true,
      reconnectDelayMs: options.reconnectDelayMs ?? 100,
      maxReconnectDelayMs: options.maxReconnectDelayMs ?? 5000,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      closeTimeoutMs: options.closeTimeoutMs ?? 10_000,
      log: options.log ?? ((line) => process.stderr.write(`${line}\n`)),
      protocolVersion,
    };
  }

  /** What jetfan announced in the latest READY. */
  get ready(): Ready {
    return this.#ready;
  }

  /** Messages received on the current connection and not yet handed out (at most READY's maxUnconfirmed). */
  get buffered(): number {
    return this.#queue.length - this.#head;
  }

  /** A connection is open and READY. */
  get connected(): boolean {
    return this.#conn?.alive === true;
  }

  /** @internal The first connection: retried while the socket is missing or refuses. */
  async start(signal: AbortSignal | undefined): Promise<void> {
    const deadline = Date.now() + this.#options.connectTimeoutMs;
    let delay = 50;
    for (;;) {
      signal?.throwIfAborted();
      try {
        this.#adopt(await this.#dial(signal));
        return;
      } catch (error) {
        if (error instanceof JetfanError || error instanceof ProtocolError || signal?.aborted) throw error;
        if (Date.now() + delay > deadline) {
          throw new Error(`cannot connect to jetfan at ${this.socketPath}: ${(error as Error).message}`, { cause: error });
        }
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 1000);
      }
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<Message, undefined> {
    this.#claim("iterator");
    const handOut = (msg: Delivery | undefined): IteratorResult<Message, undefined> =>
      msg ? { value: msg, done: false } : { value: undefined, done: true };
    return {
      next: () => {
        const ready = this.#failure || this.#closing ? undefined : this.#shift();
        return ready ? Promise.resolve(handOut(ready)) : this.#take().then(handOut);
      },
      // The loop is over (break, return or a throw in its body): nothing in it will confirm anything
      // more, so the connection closes at once, or once the publishes sent have their answers.
      return: async () => {
        this.#loopLeft = true;
        const closed = this.close();
        if (this.#idle()) this.#finishClose?.();
        await closed;
        return { value: undefined, done: true };
      },
    };
  }

  /**
   * Runs `fn` for each message, at most `concurrency` at once. When fn returns (or its promise
   * resolves) the message is ACKed; when it throws Term, TERMed with its message as the reason;
   * when it throws Nak, NAKed with its delay and its message as the reason; when it throws anything
   * else, NAKed with the error's message (or String(error)) as the reason, and the error logged.
   * A NAK's reason is sent on a protocol version 3 connection only. A message fn confirmed itself
   * is left as it is. Resolves once the handler is closed and every callback has finished; rejects
   * with JetfanError or ProtocolError if the connection ends with one (after the running callbacks
   * have finished).
   */
  async process(fn: (msg: Message) => unknown, options: ProcessOptions = {}): Promise<void> {
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency must be an integer >= 1, got ${concurrency}`);
    this.#claim("process");
    let slotFree: (() => void) | undefined;
    const running = new Set<Promise<void>>();
    try {
      for (;;) {
        while (running.size >= concurrency) await new Promise<void>((resolve) => (slotFree = resolve));
        // Messages already here are taken without waiting, and a callback that does not return a
        // promise is settled at once: no promise per message where none is needed.
        const msg = (this.#failure || this.#closing ? undefined : this.#shift()) ?? (await this.#take());
        if (!msg) break;
        let result: unknown;
        try {
          result = fn(msg);
        } catch (error) {
          this.#failed(msg, error);
          continue;
        }
        if (!isPromiseLike(result)) {
          if (!msg.confirmed) msg.ack();
          continue;
        }
        const run = this.#settle(result, msg).finally(() => {
          running.delete(run);
          slotFree?.();
        });
        running.add(run);
      }
    } finally {
      await Promise.all(running);
    }
    await this.#closeDone;
  }

  /**
   * Publishes a message through jetfan (protocol version 3; PROTOCOL.md "Publishing"), over jetfan's
   * own connection to NATS, on the connection open now: to a subject a JetStream stream captures and
   * the handler's `publish.subjects` in jetfan's config allow. Written with the same turn's other
   * lines. Resolves once JetStream has stored it; publishes are answered in any order.
   *
   * Rejects with PublishError when it was not stored, or may not have been: jetfan's PUBERR code
   * (not-allowed, no-stream, refused, timeout, ...), or "connection-lost" (sent, and the connection
   * closed before the answer: the outcome is unknown), "not-connected" (no connection is open: jetfan
   * is restarting, or the handler closed; not sent), "unsupported" (protocol version 1 or 2; not
   * sent). Rejects with TypeError or RangeError, without sending, for a subject that is not one word,
   * a header that cannot be written, a line over 1024 bytes or a body over 64 MiB. To publish in
   * reaction to a message, use msg.publish(): tied to it, it is made once however often the message
   * comes.
   */
  publish(subject: string, data: PublishData, options: PublishOptions = {}): Promise<Published> {
    const conn = this.#conn;
    if (!conn) return Promise.reject(new PublishError("not-connected", "no connection to jetfan is open", subject, this.socketPath));
    return conn.publish(subject, data, options.headers);
  }

  /**
   * Stops handing out messages, waits (up to closeTimeoutMs) until every message already handed out
   * is confirmed (a process() callback confirms its message when it returns) and every publish sent
   * is answered, writes the confirmations and closes the connection. Messages received but not
   * handed out are left unconfirmed: jetfan redelivers them. Idempotent. Leaving a for-await loop
   * closes at once, or as soon as every publish sent is answered (within closeTimeoutMs).
   */
  close(): Promise<void> {
    if (this.#closeDone) return this.#closeDone;
    this.#closing = true;
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    this.#closeDone = new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      this.#finishClose = () => {
        this.#finishClose = undefined;
        clearTimeout(timer);
        const conn = this.#conn;
        if (!conn || !conn.alive) return resolve();
        conn.flush();
        conn.ending = true;
        conn.socket.end();
        const force = setTimeout(() => conn.socket.destroy(), 2000);
        void conn.closed.then(() => {
          clearTimeout(force);
          resolve();
        });
      };
      if (!this.#idle()) timer = setTimeout(() => this.#finishClose?.(), this.#options.closeTimeoutMs);
    });
    this.#notify();
    if (this.#idle()) this.#finishClose?.();
    return this.#closeDone;
  }

  // Nothing handed out is waiting for a confirmation, nor a publish for its answer, on a live
  // connection.
  #idle(): boolean {
    const conn = this.#conn;
    return !conn || !conn.alive || ((conn.handedOut === 0 || this.#loopLeft) && conn.publishes.size === 0);
  }

  #claim(consumer: "iterator" | "process"): void {
    if (this.#consumer) throw new Error(`this handler is already consumed by ${this.#consumer === "iterator" ? "a for-await loop" : "process()"}`);
    this.#consumer = consumer;
  }

  async #settle(result: PromiseLike<unknown>, msg: Message): Promise<void> {
    try {
      await result;
      if (!msg.confirmed) msg.ack();
    } catch (error) {
      this.#failed(msg, error);
    }
  }

  // A callback threw `error` for `msg`: Term TERMs, Nak NAKs with its delay, anything else NAKs;
  // the error's message is the reason either way (a NAK's from protocol version 3 on).
  #failed(msg: Message, error: unknown): void {
    if (msg.confirmed) {
      this.#options.log(`jetfan client: callback for ${msg.key} #${msg.seq} threw after confirming it: ${String(error)}`);
    } else if (error instanceof Term) {
      msg.term(error.message);
    } else if (error instanceof Nak) {
      msg.nak(error.delayMs, error.message);
    } else {
      this.#options.log(`jetfan client: callback for ${msg.key} #${msg.seq} failed, NAK: ${(error as Error)?.stack ?? String(error)}`);
      msg.nak(undefined, reasonOf(error));
    }
  }

  // The next message to hand out; undefined once closing. Throws the failure that ended the handler.
  async #take(): Promise<Delivery | undefined> {
    for (;;) {
      if (this.#failure) throw this.#failure;
      if (this.#closing) return undefined;
      const msg = this.#shift();
      if (msg) return msg;
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
  }

  // Takes the first message of the queue that is not stale, if any.
  #shift(): Delivery | undefined {
    while (this.#head < this.#queue.length) {
      const msg = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined as unknown as Delivery;
      if (this.#head === this.#queue.length) {
        this.#queue = [];
        this.#head = 0;
      } else if (this.#head >= 1024) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      const conn = this.#conn;
      if (conn?.paused && this.#queue.length - this.#head < conn.ready!.maxUnconfirmed) {
        conn.paused = false;
        conn.socket.resume();
      }
      if (!msg.stale) {
        msg.taken();
        return msg;
      }
    }
    return undefined;
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  // Opens a connection and says HELLO asking for `version`; resolves at READY. Frames after READY go
  // to #onFrame. A jetfan that speaks only version 1 refuses a higher one before anything is
  // delivered: then it dials again asking for version 1.
  #dial(signal?: AbortSignal, version = this.#options.protocolVersion): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const socket = netConnect(this.socketPath);
      const conn = new Connection(socket, this.socketPath);
      const timer = setTimeout(() => {
        conn.lastError = new Error(`no READY within ${HANDSHAKE_TIMEOUT_MS} ms`);
        socket.destroy();
      }, HANDSHAKE_TIMEOUT_MS);
      const onAbort = () => socket.destroy();
      signal?.addEventListener("abort", onAbort, { once: true });
      const handshakeOver = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      socket.on("connect", () => socket.write(encodeHello(this.name, version)));
      const frames: Frame[] = [];
      socket.on("data", (chunk: Buffer) => {
        try {
          conn.parser.feed(chunk, frames);
        } catch (error) {
          conn.broken = error as ProtocolError;
          socket.destroy();
        }
        for (const frame of frames) {
          if (!conn.ready && frame.type === "READY") {
            if (frame.version < 1 || frame.version > version) {
              conn.broken = new ProtocolError("bad-number", `READY in protocol version ${frame.version}, not one up to ${version}`);
              socket.destroy();
              break;
            }
            conn.ready = readyOf(frame);
            handshakeOver();
            resolve(conn);
          } else {
            this.#onFrame(conn, frame);
          }
        }
        frames.length = 0;
      });
      socket.on("error", (error) => (conn.lastError = error));
      socket.on("close", () => {
        conn.markClosed();
        if (!conn.ready) {
          handshakeOver();
          if (conn.refusal !== undefined && version > 1 && conn.refusal.includes("protocol version")) {
            resolve(this.#dial(signal, 1));
          } else if (conn.refusal !== undefined) reject(new JetfanError(conn.refusal, this.socketPath));
          else if (conn.broken) reject(conn.broken);
          else if (signal?.aborted) reject(signal.reason);
          else reject(conn.lastError ?? new Error("jetfan closed the connection before READY"));
          return;
        }
        this.#onClose(conn);
      });
    });
  }

  #adopt(conn: Connection): void {
    if (this.#closing) {
      conn.socket.end(); // closed while this connection was being made
      return;
    }
    this.#conn = conn;
    this.#ready = conn.ready!;
    conn.onSettled = () => {
      if (this.#closing && this.#idle()) this.#finishClose?.();
    };
    this.emit("connect", this.#ready);
    if (!conn.alive) this.#onClose(conn); // it closed right after READY, before it was adopted
  }

  #onFrame(conn: Connection, frame: Frame): void {
    switch (frame.type) {
      case "MSG": {
        if (!conn.alive) return;
        this.#queue.push(new Delivery(frame, conn));
        const limit = conn.ready?.maxUnconfirmed ?? 1;
        if (!conn.paused && this.#queue.length - this.#head >= limit && conn.publishes.size === 0) {
          conn.paused = true; // the app is behind: leave the rest in the socket (no answer is awaited)
          conn.socket.pause();
        }
        this.#notify();
        return;
      }
      case "PING":
        conn.send(PONG_LINE);
        return;
      case "ERR":
        conn.refusal = frame.reason;
        conn.socket.destroy();
        return;
      case "PUBOK":
      case "PUBERR":
        if (!conn.alive || conn.broken || conn.answer(frame)) return;
        // An answer to no PUB of this connection that waits: jetfan is confused, or something else
        // speaks on the socket. The connection ends with ProtocolError, as when the bytes break.
        conn.broken = new ProtocolError(
          "unexpected-frame",
          `jetfan at ${this.socketPath} sent ${frame.type} for request ${frame.id}, but no PUB of this connection waits for it`,
        );
        conn.socket.destroy();
        return;
      case "PONG":
      case "READY":
        return;
    }
  }

  #onClose(conn: Connection): void {
    const failure =
      conn.refusal !== undefined ? new JetfanError(conn.refusal, this.socketPath) : conn.broken;
    this.emit("disconnect", failure ?? conn.lastError);
    if (conn !== this.#conn) return;
    // Whatever was received and not handed out is stale: jetfan redelivers it.
    this.#queue = [];
    this.#head = 0;
    if (failure) {
      this.#failure = failure;
      this.#notify();
      this.#finishClose?.();
      return;
    }
    if (this.#closing) {
      this.#finishClose?.();
      return;
    }
    if (!this.#options.reconnect) {
      this.#closing = true;
      this.#closeDone = Promise.resolve();
      this.#notify();
      return;
    }
    this.#options.log(`jetfan client: connection to ${this.socketPath} closed${conn.lastError ? ` (${conn.lastError.message})` : ""}; reconnecting`);
    this.#reconnect(this.#options.reconnectDelayMs);
  }

  #reconnect(delay: number): void {
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      if (this.#closing) return;
      this.#dial().then(
        (conn) => {
          this.#options.log(`jetfan client: reconnected to ${this.socketPath} as ${this.name}`);
          this.#adopt(conn);
          this.#notify();
        },
        (error: Error) => {
          if (error instanceof JetfanError || error instanceof ProtocolError) {
            this.#failure = error;
            this.#notify();
            this.#finishClose?.();
            return;
          }
          if (!this.#closing) this.#reconnect(Math.min(delay * 2, this.#options.maxReconnectDelayMs));
        },
      );
    }, delay);
  }
}

// What a thrown value says about itself: an Error's message, else the value as a string.
function reasonOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    return ""; // an object whose toString throws (or one without it): no reason
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === "function";
}

function readyOf(frame: ReadyFrame): Ready {
  return { version: frame.version, handler: frame.handler, maxUnconfirmed: frame.maxUnconfirmed, patterns: frame.patterns };
}

/**
 * Connects to jetfan's socket as `options.handler` and waits for READY. Retries for up to
 * connectTimeoutMs while the socket is missing or refuses (jetfan may be starting). Rejects with
 * JetfanError if jetfan refuses the handler (ERR), with the signal's reason if aborted.
 */
export async function connect(options: ConnectOptions): Promise<Handler> {
  const handler = new Handler(options);
  await handler.start(options.signal);
  const signal = options.signal;
  if (signal) {
    const onAbort = () => void handler.close();
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  }
  return handler;
}
