// The package as a module author gets it: `npm pack` makes a tarball, a scratch project installs it
// (offline, from the file), compiles the README's example handler (examples/handler.ts) against its
// types with tsc, and runs it against the real jetfan.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { Child, Mesh, handlerYaml } from "./mesh.mjs";

const packageDir = join(fileURLToPath(import.meta.url), "../..");
const example = join(packageDir, "../../examples/handler.ts");

test("npm pack makes a tarball that installs offline; the example handler compiles against it and runs", { timeout: 180_000 }, async (t) => {
  const scratch = mkdtempSync(join(tmpdir(), "jetfan-scratch-"));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));

  // test.sh has just built dist/; npm pack's prepack script (tsc) would only build it again.
  const packed = JSON.parse(execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", scratch], { cwd: packageDir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
  const files = packed[0].files.map((f) => f.path).sort();
  assert.ok(files.includes("dist/index.js") && files.includes("dist/index.d.ts") && files.includes("dist/codec.d.ts"), files.join(" "));
  assert.ok(!files.some((f) => f.startsWith("src/") || f.startsWith("test/")), files.join(" "));

  const project = join(scratch, "module");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "scratch-module", private: true, type: "module" }));
  execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", join(scratch, packed[0].filename)], { cwd: project, stdio: "ignore" });
  assert.equal(JSON.parse(readFileSync(join(project, "node_modules/@jetfan/client/package.json"), "utf8")).name, "@jetfan/client");

  assert.ok(readFileSync(example, "utf8").trimEnd().split("\n").length <= 15, "the example stays within 15 lines");
  copyFileSync(example, join(project, "handler.ts"));
  writeFileSync(
    join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true,
        typeRoots: [join(packageDir, "node_modules/@types")], types: ["node"],
      },
      files: ["handler.ts"],
    }),
  );
  execFileSync(process.execPath, [join(packageDir, "node_modules/typescript/bin/tsc"), "-p", project], { stdio: "inherit" });

  const mesh = await Mesh.start();
  t.after(() => mesh.close());
  mesh.writeConfig(handlerYaml("builder", ["mesh-build-machine.built"]));
  await mesh.startJetfan();
  const handler = new Child([process.execPath, join(project, "handler.js")], { JETFAN_SOCKET: mesh.socketPath });
  t.after(() => handler.stop("SIGKILL"));
  await mesh.jetfan.waitOutput("connected");
  const seq = await mesh.publish("mesh-build-machine.built", JSON.stringify({ machine: 3 }));
  await handler.waitOutput(`[builder] got mesh-build-machine.built (seq ${seq}): {"machine":3}`);
  await mesh.waitSettled();
  assert.deepEqual(await handler.stop("SIGTERM"), { code: 0, signal: null }, handler.output);
});
