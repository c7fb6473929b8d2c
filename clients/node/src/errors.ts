// The errors a handler sees, and the two a process() callback may throw to choose its confirmation.

/**
 * jetfan said no. JetfanError itself: jetfan refused this connection with ERR (for example an
 * undeclared handler name); not retried. Its subclass PublishError: a publish was not stored, or may
 * not have been.
 */
export class JetfanError extends Error {
  override name = "JetfanError";
  /** The reason jetfan gave, as it sent it. */
  readonly reason: string;
  constructor(reason: string, socket: string, message = `jetfan at ${socket} refused the connection: ${reason}`) {
    super(message);
    this.reason = reason;
  }
}

/**
 * A publish (handler.publish(), msg.publish()) that jetfan answered with PUBERR, or that got no
 * answer. `code` is PUBERR's, kept as it came when this client does not know it (PROTOCOL.md,
 * "Publishing"), or one of the client's own:
 *
 * - "connection-lost": it was sent, and the connection closed before its answer came. It may have
 *   been stored (the outcome is unknown, as after "timeout").
 * - "not-connected": no connection was open (jetfan is restarting, or the handler is closed). Not sent.
 * - "unsupported": the connection speaks protocol version 1 or 2, which have no PUB. Not sent.
 * - "not-in-flight", for a publish tied to a message already confirmed or stale: not sent, since
 *   jetfan would answer that (a stale message comes again, and its redelivery may publish).
 *
 * Of jetfan's codes, only "timeout" leaves the outcome unknown; the others mean it was not stored.
 */
export class PublishError extends JetfanError {
  override name = "PublishError";
  /** Why: PUBERR's code (not-allowed, no-stream, refused, timeout, ...) or the client's own (above). */
  readonly code: string;
  /** The subject it was published to. */
  readonly subject: string;
  constructor(code: string, reason: string, subject: string, socket: string) {
    super(reason, socket, `publish to ${subject} through jetfan at ${socket} failed: ${code}${reason === "" ? "" : ` (${reason})`}`);
    this.code = code;
    this.subject = subject;
  }
}

/** Throw from a process() callback to TERM the message: never deliver it to this handler again. */
export class Term extends Error {
  override name = "Term";
  constructor(reason = "") {
    super(reason);
  }
}

/**
 * Throw from a process() callback to NAK the message with a redelivery delay of your choice
 * (undefined: jetfan's own growing delay), and `message` as the NAK's reason (sent on a protocol
 * version 3 connection; none when empty). Unlike any other error, it is not logged.
 */
export class Nak extends Error {
  override name = "Nak";
  constructor(
    readonly delayMs?: number,
    message = "",
  ) {
    super(message);
  }
}
