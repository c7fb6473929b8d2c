// The NATS header block of a message ("NATS/1.0\r\nName: value\r\n...\r\n"), parsed on first use.

/** Read-only view of a message's NATS headers. Names match case-insensitively. */
export class MsgHeaders implements Iterable<[string, string]> {
  /** The header block as jetfan delivered it (empty when the message has none). */
  readonly raw: Buffer;
  #entries: [string, string][] | undefined;

  constructor(raw: Buffer) {
    this.raw = raw;
  }

  /** The first value of `name`, or undefined. */
  get(name: string): string | undefined {
    const wanted = name.toLowerCase();
    return this.#parsed().find(([n]) => n.toLowerCase() === wanted)?.[1];
  }

  /** Every value of `name`, in order. */
  getAll(name: string): string[] {
    const wanted = name.toLowerCase();
    return this.#parsed()
      .filter(([n]) => n.toLowerCase() === wanted)
      .map(([, v]) => v);
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  /** How many name/value pairs there are. */
  get size(): number {
    return this.#parsed().length;
  }

  [Symbol.iterator](): Iterator<[string, string]> {
    return this.#parsed()[Symbol.iterator]();
  }

  #parsed(): [string, string][] {
    if (this.#entries) return this.#entries;
    this.#entries = [];
    if (this.raw.length === 0) return this.#entries;
    const lines = this.raw.toString("utf8").split("\r\n");
    // lines[0] is the version line ("NATS/1.0", maybe with a status); a blank line ends the block.
    for (const line of lines.slice(1)) {
      if (line === "") break;
      const colon = line.indexOf(":");
      if (colon <= 0) continue; // not a header line: skipped, as NATS clients do
      this.#entries.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
    }
    return this.#entries;
  }
}

/**
 * Headers to publish with: names and values, as an object or as pairs (a Map, an array of pairs, or
 * a message's MsgHeaders to pass them on). A name may come more than once as pairs.
 */
export type PublishHeaders = Readonly<Record<string, string>> | Iterable<readonly [string, string]>;

/**
 * The NATS header block of `headers` ("NATS/1.0\r\nName: value\r\n...\r\n"), or "" when there are
 * none. Throws TypeError for a name that is not one (empty, or with a byte outside 0x21-0x7e, or a
 * colon) and for a value with \r or \n: either would break the block, and jetfan would refuse it
 * (PUBERR bad-headers) or read other headers than were meant.
 */
export function headerBlock(headers: PublishHeaders): string {
  const pairs: Iterable<readonly [string, string]> =
    Symbol.iterator in headers ? (headers as Iterable<readonly [string, string]>) : Object.entries(headers);
  let block = "";
  for (const [name, value] of pairs) {
    if (!/^[!-9;-~]+$/.test(name)) throw new TypeError(`header name must be printable ASCII without ':' or spaces, got "${name}"`);
    if (/[\r\n]/.test(value)) throw new TypeError(`header ${name}: a value may not hold \\r or \\n`);
    block += `${name}: ${value}\r\n`;
  }
  return block === "" ? "" : `NATS/1.0\r\n${block}\r\n`;
}
