// Test support: a whole mesh for one test, made of real parts. A temp dir; a real nats-server with
// JetStream in it on a free port; stream EVENTS on events.> and a durable pull consumer made the way
// a controller makes them (with the nats package), and perhaps more streams for handlers to publish
// to (addStream); the real jetfan binary on a socket in the dir.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AckPolicy, connect as natsConnect, headers as natsHeaders, nanos } from "nats";

export const JETFAN_BIN =
  process.env.JETFAN_BIN ?? join(fileURLToPath(import.meta.url), "../../../../build/daemon/jetfan");

/** Polls `check` until it returns a truthy value; fails after `timeoutMs`. */
export async function waitFor(check, what, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A child process whose output is collected; exit() waits for it to end. */
class Child {
  constructor(argv, env) {
    this.output = "";
    this.process = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    this.process.stdout.on("data", (d) => (this.output += d));
    this.process.stderr.on("data", (d) => (this.output += d));
    this.exited = new Promise((resolve) => this.process.on("exit", (code, signal) => resolve({ code, signal })));
  }
  waitOutput(part, timeoutMs = 20_000) {
    return waitFor(() => {
      if (this.output.includes(part)) return true;
      if (this.process.exitCode !== null || this.process.signalCode !== null) {
        throw new Error(`${this.process.spawnfile} exited before writing "${part}":\n${this.output}`);
      }
      return false;
    }, `"${part}" in the output of ${this.process.spawnfile}:\n${this.output}`, timeoutMs);
  }
  count(part) {
    return this.output.split(part).length - 1;
  }
  async stop(signal = "SIGTERM") {
    if (this.process.exitCode === null && this.process.signalCode === null) this.process.kill(signal);
    return this.exited;
  }
}

export class Mesh {
  /** Starts nats-server and makes the stream and the durable consumer. */
  static async start({ ackWaitMs = 30_000, maxAckPending = 1000 } = {}) {
    const mesh = new Mesh();
    mesh.dir = mkdtempSync(join(tmpdir(), "jetfan-node-"));
    mesh.socketPath = join(mesh.dir, "jetfan.sock");
    const binary = process.env.JETFAN_NATS_SERVER || "nats-server"; // scripts/compat.sh sets it
    mesh.server = new Child([binary, "-js", "-sd", join(mesh.dir, "js"), "-a", "127.0.0.1", "-p", "-1"]);
    await mesh.server.waitOutput("Listening for client connections on 127.0.0.1:");
    const port = /Listening for client connections on 127\.0\.0\.1:(\d+)/.exec(mesh.server.output)[1];
    mesh.url = `nats://127.0.0.1:${port}`;
    mesh.nc = await natsConnect({ servers: mesh.url });
    mesh.jsm = await mesh.nc.jetstreamManager();
    mesh.js = mesh.nc.jetstream();
    await mesh.jsm.streams.add({ name: "EVENTS", subjects: ["events.>"] });
    await mesh.jsm.consumers.add("EVENTS", {
      durable_name: "node1_builder",
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(ackWaitMs),
      max_ack_pending: maxAckPending,
    });
    return mesh;
  }

  /** Publishes to events.<key>; returns the stream sequence. */
  async publish(key, data = "x", headers = {}) {
    const h = natsHeaders();
    for (const [name, value] of Object.entries(headers)) h.append(name, value);
    const ack = await this.js.publish(`events.${key}`, typeof data === "string" ? new TextEncoder().encode(data) : data, {
      headers: Object.keys(headers).length ? h : undefined,
    });
    return ack.seq;
  }

  /** Makes a stream only, as `jetfan-demo-controller URL stream NAME SUBJECT` does: where handlers publish. */
  async addStream(name, subjects) {
    await this.jsm.streams.add({ name, subjects });
  }

  /** How many messages stream `name` holds. */
  async messages(name) {
    return (await this.jsm.streams.info(name)).state.messages;
  }

  /** Message `seq` of stream `name`: { subject, data (a string), headers (an object) }. */
  async message(name, seq) {
    const m = await this.jsm.streams.getMessage(name, { seq });
    const headers = {};
    for (const [key, values] of m.header ?? []) headers[key] = values.join(",");
    return { subject: m.subject, data: new TextDecoder().decode(m.data), headers };
  }

  async state() {
    const info = await this.jsm.consumers.info("EVENTS", "node1_builder");
    return { pending: info.num_pending, ackPending: info.num_ack_pending, redelivered: info.num_redelivered };
  }

  /** Waits until the server says nothing is pending or awaiting ack. */
  async waitSettled() {
    await waitFor(async () => {
      const s = await this.state();
      return s.pending === 0 && s.ackPending === 0;
    }, "the consumer to settle");
  }

  /** Writes jetfan's config: `handlers` is YAML for the handlers list, `extra` more top-level YAML. */
  writeConfig(handlers, extra = "") {
    writeFileSync(
      join(this.dir, "jetfan.yaml"),
      `nats:\n  servers: ["${this.url}"]\n  retry_max: 500ms\n` +
        `consumer:\n  stream: EVENTS\n  durable: node1_builder\n  pull_expires: 1s\n  idle_heartbeat: 500ms\n` +
        `key:\n  strip_prefix: "events."\n` +
        `socket:\n  path: ${this.socketPath}\n` +
        `delivery:\n  nak_delay: 100ms\n  drain_timeout: 1s\n` +
        `handlers:\n${handlers}${extra}`,
    );
  }

  /** Starts `jetfan serve` with the config written last and waits until it serves. */
  async startJetfan() {
    this.jetfan = new Child([JETFAN_BIN, "serve", "--config", join(this.dir, "jetfan.yaml"), "--log-level", "debug"]);
    await this.jetfan.waitOutput("serving consumer");
    return this.jetfan;
  }

  /** SIGTERM, then waits for jetfan to exit; returns its exit status. */
  async stopJetfan() {
    const result = await this.jetfan.stop();
    return result;
  }

  async close() {
    await this.jetfan?.stop("SIGKILL");
    await this.nc?.close();
    await this.server?.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * `name` on `patterns`, as a handlers-list YAML entry; with `publish`, the subjects it may publish to
 * (its `publish.subjects`).
 */
export function handlerYaml(name, patterns, { maxInflight = 64, ackTimeout = "30s", publish } = {}) {
  const quoted = (list) => `[${list.map((p) => `"${p}"`).join(", ")}]`;
  return (
    `  - name: ${name}\n    patterns: ${quoted(patterns)}\n    max_inflight: ${maxInflight}\n    ack_timeout: ${ackTimeout}\n` +
    (publish ? `    publish:\n      subjects: ${quoted(publish)}\n` : "")
  );
}

export { Child };
