// The errors a handler sees, and the two a process() callback may throw to choose its confirmation.

/** jetfan refused this connection with ERR (for example an undeclared handler name). Not retried. */
export class JetfanError extends Error {
  override name = "JetfanError";
  /** The reason jetfan gave, as it sent it. */
  readonly reason: string;
  constructor(reason: string, socket: string) {
    super(`jetfan at ${socket} refused the connection: ${reason}`);
    this.reason = reason;
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
