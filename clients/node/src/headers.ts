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
