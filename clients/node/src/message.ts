// One delivery as a handler sees it, and how it is confirmed.

import { encodeAck, encodeNak, encodeTerm, encodeWip, type MsgFrame, type U64 } from "./codec.js";
import { MsgHeaders } from "./headers.js";

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

  #confirm(line: string): boolean {
    if (this.#confirmed || !this.#link.alive) return false;
    this.#confirmed = true;
    this.#link.send(line);
    this.#link.settled();
    return true;
  }
}
