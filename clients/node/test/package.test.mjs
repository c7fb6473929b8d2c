// The package as a module author gets it: `npm pack` makes a tarball, a scratch project installs it
// (offline, from the file), compiles the README's example handler (examples/handler.ts) against its
// types with tsc, and runs it against the real jetfan. `npm pack` works in a clean checkout too, and a
// CommonJS project can require() the package.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { fileURLToPath } from "node:url";

import { Child, Mesh, handlerYaml } from "./mesh.mjs";

const packageDir = join(fileURLToPath(import.meta.url), "../..");
const example = join(packageDir, "../../examples/handler.ts");

// What a registry would get: the compiled package, its types, the sources its source maps name (so a
// debugger shows them), the README and the licence; no tests, no build files.
function checkFileList(files, dir = packageDir) {
  const list = files.join(" ");
  for (const want of ["package.json", "README.md", "LICENSE", "dist/index.js", "dist/index.d.ts", "dist/codec.d.ts"]) {
    assert.ok(files.includes(want), `the package lacks ${want}: ${list}`);
  }
  assert.ok(!files.some((f) => /^(test|bench|node_modules)\//.test(f) || f.endsWith(".sh") || f.startsWith("tsconfig")), list);
  const maps = files.filter((f) => f.endsWith(".map"));
  assert.ok(maps.length > 0, `no source maps: ${list}`);
  for (const map of maps) {
    assert.ok(files.includes(map.slice(0, -".map".length)), `${map} without its file: ${list}`);
    const { sources } = JSON.parse(readFileSync(join(dir, map), "utf8"));
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

// A clean checkout has neither node_modules nor dist: prepack installs the devDependencies (npm ci,
// from npm's cache when it has them) and compiles, so a plain `npm pack` works.
test("npm pack in a clean checkout installs the devDependencies, compiles and packs", { timeout: 180_000 }, (t) => {
  const scratch = mkdtempSync(join(tmpdir(), "jetfan-checkout-"));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const checkout = join(scratch, "node");
  for (const f of ["package.json", "package-lock.json", "tsconfig.json", "README.md", "LICENSE", "src"]) {
    cpSync(join(packageDir, f), join(checkout, f), { recursive: true });
  }
  const packed = JSON.parse(execFileSync("npm", ["pack", "--json", "--pack-destination", scratch], { cwd: checkout, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
  checkFileList(packed[0].files.map((f) => f.path), checkout);
});

// The package is one ES module. Node 20.19 and later load it with require() too (require(esm)), and
// require() and import() give the same module: one Handler class, one JetfanError.
test("from a CommonJS project, require() and import() of the installed package give the same module", {
  timeout: 180_000, skip: !process.features.require_module && "this Node cannot require() an ES module (20.19 and later can)",
}, (t) => {
  const scratch = mkdtempSync(join(tmpdir(), "jetfan-cjs-"));
  t.after(() => rmSync(scratch, { recursive: true, force: true }));
  const packed = JSON.parse(execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", scratch], { cwd: packageDir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
  const project = join(scratch, "cjs");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "scratch-cjs", private: true })); // no "type": CommonJS
  execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", join(scratch, packed[0].filename)], { cwd: project, stdio: "ignore" });
  writeFileSync(join(project, "handler.js"), [
    'const client = require("@jetfan/client");',
    'const codec = require("@jetfan/client/codec");',
    'console.log(typeof client.connect, typeof client.Handler, typeof client.Term, typeof codec.FrameParser);',
    'import("@jetfan/client").then((esm) => console.log(esm.connect === client.connect, esm.JetfanError === client.JetfanError));',
  ].join("\n"));
  writeFileSync(join(project, "handler.mjs"), 'import { connect } from "@jetfan/client";\nconsole.log(typeof connect);\n');
  const run = (file) => {
    const { status, stdout, stderr } = spawnSync(process.execPath, [file], { cwd: project, encoding: "utf8" });
    assert.equal(status, 0, stderr);
    assert.equal(stderr, "", "no warning"); // no ExperimentalWarning, no MODULE_TYPELESS_PACKAGE_JSON
    return stdout;
  };
  assert.equal(run("handler.js"), "function function function function\ntrue true\n");
  assert.equal(run("handler.mjs"), "function\n");
});
