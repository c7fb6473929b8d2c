// The package as a module author gets it: `npm pack` makes a tarball, a scratch project installs it
// (offline, from the file), compiles the README's example handler (examples/handler.ts) against its
// types with tsc, and runs it against the real jetfan.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { fileURLToPath } from "node:url";

import { Child, Mesh, handlerYaml } from "./mesh.mjs";

const packageDir = join(fileURLToPath(import.meta.url), "../..");
const example = join(packageDir, "../../examples/handler.ts");

// What a registry would get: the compiled package, its types, the sources its source maps name (so a
// debugger shows them), the README and the licence; no tests, no build files.
function checkFileList(files) {
  const list = files.join(" ");
  for (const want of ["package.json", "README.md", "LICENSE", "dist/index.js", "dist/index.d.ts", "dist/codec.d.ts"]) {
    assert.ok(files.includes(want), `the package lacks ${want}: ${list}`);
  }
  assert.ok(!files.some((f) => /^(test|bench|node_modules)\//.test(f) || f.endsWith(".sh") || f.startsWith("tsconfig")), list);
  const maps = files.filter((f) => f.endsWith(".map"));
  assert.ok(maps.length > 0, `no source maps: ${list}`);
  for (const map of maps) {
    assert.ok(files.includes(map.slice(0, -".map".length)), `${map} without its file: ${list}`);
    const { sources } = JSON.parse(readFileSync(join(packageDir, map), "utf8"));
    for (const source of sources) {
      const shipped = posix.normalize(posix.join(posix.dirname(map), source));
      assert.ok(files.includes(shipped), `${map} names ${source} (${shipped}), which the package lacks: ${list}`);
    }
  }
  assert.equal(readFileSync(join(packageDir, "LICENSE"), "utf8"), readFileSync(join(packageDir, "../../LICENSE"), "utf8"),
    "clients/node/LICENSE is the repository's LICENSE");
}

test("npm pack --dry-run: the package's files are the built package, its sources and its licence", () => {
  const packed = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--ignore-scripts", "--json"], { cwd: packageDir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
  checkFileList(packed[0].files.map((f) => f.path));
  const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
  assert.equal(manifest.private, undefined, "a package that can be published is not private");
  assert.equal(manifest.license, "Apache-2.0");
  assert.ok(manifest.repository?.url && manifest.repository.directory === "clients/node", JSON.stringify(manifest.repository));
  assert.equal(manifest.version, readFileSync(join(packageDir, "../../VERSION"), "utf8").trim(), "package.json's version is VERSION's");
});

test("npm pack makes a tarball that installs offline; the example handler compiles against it and runs", { timeout: 180_000 }, async (t) => {
  const scratch = mkdtempSync(join(tmpdir(), "jetfan-scratch-"));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));

  // test.sh has just built dist/; npm pack's prepack script (tsc) would only build it again.
  const packed = JSON.parse(execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", scratch], { cwd: packageDir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
  checkFileList(packed[0].files.map((f) => f.path));

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
