// One delivery as a handler sees it, and how it is confirmed.

import { encodeAck, encodeNak, encodeTerm, encodeWip, type MsgFrame, type U64 } from "./codec.js";
import { PublishError } from "./errors.js";
import { MsgHeaders, type PublishHeaders } from "./headers.js";

/** What JetStream said of a stored publish (PUBOK). */
export interface Published {
  /** The stream that stored it. */
  stream: string;
  /** Its sequence in that stream (exact up to 2^53 - 1). */
  seq: number;
  /**
   * The stream already held a message with its Nats-Msg-Id (a tied publish made again by a
   * redelivery, say) and dropped this copy: `seq` is the one it holds.
   */
  duplicate: boolean;
}

/** A publish's payload: bytes as they are, or a string as UTF-8. */
export type PublishData = Uint8Array | string;

export interface PublishOptions {
  /** NATS headers to publish with (none by default). */
  headers?: PublishHeaders;
}

export interface TiedPublishOptions extends PublishOptions {
  /**
   * This publish's index among the message's publishes, which names it in its Nats-Msg-Id. Default:
   * how many publish() calls this delivery of the message had before this one (0, 1, 2, ...).
   */
  index?: number;
}

/**
 * One delivery of a message. Confirm it exactly once with ack(), nak() or term(); working() keeps it
 * alive past its ack_timeout. Each of these returns true if the line was queued for jetfan, and
 * false if it was not: the message was already confirmed, or it is stale (the connection that
 * delivered it has closed). jetfan counts a stale message as failed and redelivers it, so a stale
 * message must not be confirmed, and the client never writes its confirmation to a newer
 * connection. Confirmations are written together, once per turn of the event loop.
 */
export interface Message {
  /** The message's subject less jetfan's configured prefix. */
  readonly key: string;
  /** Its JetStream stream sequence: compare it to recognise a redelivery. Exact up to 2^53 - 1. */
  readonly seq: number;
  /**
   * How often jetfan has given it to this handler, this time included: 1 the first time, above 1
   * whenever it may have reached the handler before (jetfan's own retries included; after a restart
   * of jetfan, the server's count).
   */
  readonly deliveries: number;
  /** Its NATS headers (empty when it has none). */
  readonly headers: MsgHeaders;
  /**
   * When JetStream stored it (to the millisecond). From protocol version 2 on: undefined when the
   * connection speaks version 1 (an older jetfan), or jetfan did not know it.
   */
  readonly published: Date | undefined;
  /** Its full NATS subject (the key with jetfan's prefix). From protocol version 2 on, else undefined. */
  readonly subject: string | undefined;
  /**
   * How often JetStream has delivered it to jetfan: 1 the first time (jetfan's own retries to an
   * ordered handler do not count). From protocol version 2 on, else undefined.
   */
  readonly serverDeliveries: number | undefined;
  /**
   * The W3C traceparent of jetfan's span of this delivery (`00-<trace-id>-<span-id>-<flags>`), the
   * parent of the handler's own spans: give it to an OpenTelemetry propagator as the carrier's
   * `traceparent` field. From protocol version 3 on; undefined when jetfan does not trace the
   * delivery, and before version 3. (A `traceparent` header, if any, is the publisher's: an
   * ancestor of this one.)
   */
  readonly traceparent: string | undefined;
  /** Its payload, as bytes. */
  readonly data: Buffer;
  /** The payload parsed as JSON (UTF-8). Throws SyntaxError if it is not JSON. */
  json<T = unknown>(): T;
  /** The payload as UTF-8 text. */
  text(): string;
  /** Succeeded. */
  ack(): boolean;
  /**
   * Failed: redeliver it, after `delayMs` if given (else jetfan's own growing delay; pass undefined
   * to give a reason without a delay). `reason` says why: it is sent when the connection speaks
   * protocol version 3 or later (`ready.version`), and left out silently before (jetfan 0.1.0 speaks
   * 2). jetfan logs it, and puts it in the dead letter when this NAK uses up the handler's retries.
   * Written as term()'s reason is: on one line, cut to fit the protocol's 1024-byte line.
   */
  nak(delayMs?: number, reason?: string): boolean;
  /**
   * Poison: never deliver it to this handler again. The reason is logged by jetfan (and is in the
   * dead letter, if the handler has them); it is written on one line, cut to fit 1024 bytes.
   */
  term(reason?: string): boolean;
  /** Still working on it: restarts its ack_timeout. May be sent any number of times. */
  working(): boolean;
  /**
   * Publishes a message through jetfan (as Handler.publish() does), tied to this delivery: jetfan
   * gives it a Nats-Msg-Id made from this message and `index`, so that the copy a redelivery
   * publishes again is dropped by the stream (within its duplicate window) and resolves with
   * `duplicate` true; and it holds this message's ACK until the publish is stored, turning it into
   * a NAK if it is not. So ack() may follow at once, without waiting for the promise.
   *
   * `index` defaults to a counter of this message's publish() calls, 0, 1, 2, ... in call order:
   * publish in the same order each time the message is handled (a redelivery is a new Message, whose
   * counter starts at 0 again), or give each publish its own fixed index. Dedup depends on it.
   *
   * Rejects with PublishError "not-in-flight" without sending when the message is already
   * confirmed or is stale, and otherwise as Handler.publish() does. The rejection of a publish that
   * was sent, or made for a stale message, is left handled, so that one nobody awaits does not end
   * the process: jetfan acts on the failure itself (the ACK becomes a NAK, and jetfan logs why), or
   * redelivers the stale message. Any other rejection (a bad argument, a message confirmed before
   * the publish, a connection before protocol version 3) is the app's to handle.
   */
  publish(subject: string, data: PublishData, options?: TiedPublishOptions): Promise<Published>;
  /** ack(), nak() or term() has been called and queued. */
  readonly confirmed: boolean;
  /** The connection that delivered it has closed: confirming it does nothing. */
  readonly stale: boolean;
}

/** Where a delivery's confirmations go: the connection it came on. */
export interface Link {
  readonly alive: boolean;
  /** The protocol version the connection speaks (its READY's). */
  readonly version: number;
  send(line: string): void;
  /** Told once when the delivery is handed to the app. */
  taken(): void;
  /** Told once when the delivery is confirmed. */
  settled(): void;
  /** Sends a PUB, tied to delivery `tiedTo` as its `index`-th publish if given; resolves at its answer. */
  publish(subject: string, data: PublishData, headers: PublishHeaders | undefined, tiedTo?: U64, index?: number): Promise<Published>;
  /** The socket's path, for errors. */
  readonly socketPath: string;
}

export class Delivery implements Message {
  readonly key: string;
  readonly seq: number;
  readonly deliveries: number;
  readonly data: Buffer;
  readonly published: Date | undefined;
  readonly subject: string | undefined;
  readonly serverDeliveries: number | undefined;
  readonly traceparent: string | undefined;
  readonly #id: U64;
  readonly #rawHeaders: Buffer;
  #headers: MsgHeaders | undefined;
  readonly #link: Link;
  #confirmed = false;
  #publishes = 0; // publish() calls so far: the next default index

  constructor(frame: MsgFrame, link: Link) {
    this.key = frame.key;
    this.seq = Number(frame.seq);
    this.deliveries = Number(frame.deliveries);
    this.data = frame.payload;
    this.published = frame.published === 0 ? undefined : new Date(Number(BigInt(frame.published) / 1_000_000n));
    this.subject = frame.subject === "" ? undefined : frame.subject;
    this.serverDeliveries = frame.serverDeliveries === 0 ? undefined : Number(frame.serverDeliveries);
    this.traceparent = frame.traceparent;
    this.#id = frame.id;
    this.#rawHeaders = frame.headers;
    this.#link = link;
  }

  /** @internal Called by the handler as it hands the message to the app. */
  taken(): void {
    this.#link.taken();
  }

  get headers(): MsgHeaders {
    return (this.#headers ??= new MsgHeaders(this.#rawHeaders));
  }

  json<T = unknown>(): T {
    return JSON.parse(this.data.toString("utf8")) as T;
  }

  text(): string {
    return this.data.toString("utf8");
  }

  get confirmed(): boolean {
    return this.#confirmed;
  }

  get stale(): boolean {
    return !this.#link.alive;
  }

  ack(): boolean {
    return this.#confirm(encodeAck(this.#id));
  }

  nak(delayMs?: number, reason?: string): boolean {
    return this.#confirm(encodeNak(this.#id, delayMs, reason, this.#link.version));
  }

  term(reason?: string): boolean {
    return this.#confirm(encodeTerm(this.#id, reason));
  }

  working(): boolean {
    if (this.#confirmed || !this.#link.alive) return false;
    this.#link.send(encodeWip(this.#id));
    return true;
  }

  publish(subject: string, data: PublishData, options: TiedPublishOptions = {}): Promise<Published> {
    const index = options.index ?? this.#publishes;
    ++this.#publishes;
    if (this.#confirmed) {
      const reason = `message ${this.key} #${this.seq} is already confirmed: publish before ack()`;
      return Promise.reject(new PublishError("not-in-flight", reason, subject, this.#link.socketPath));
    }
    return this.#link.publish(subject, data, options.headers, this.#id, index); // stale: the link refuses it
  }

  #confirm(line: string): boolean {
    if (this.#confirmed || !this.#link.alive) return false;
    this.#confirmed = true;
    this.#link.send(line);
    this.#link.settled();
    return true;
  }
}
