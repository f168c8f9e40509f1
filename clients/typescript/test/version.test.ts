// @hookd/client is versioned with hookd.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

const root = new URL("../../../../", import.meta.url);

test("the package's version is hookd's", () => {
  const cargo = readFileSync(new URL("Cargo.toml", root), "utf8");
  const workspace = /\[workspace\.package\][^[]*?\nversion = "([^"]+)"/.exec(cargo)?.[1];
  assert.ok(workspace, "Cargo.toml has a [workspace.package] version");
  const pkg = JSON.parse(readFileSync(new URL("clients/typescript/package.json", root), "utf8")) as { version: string };
  const lock = JSON.parse(readFileSync(new URL("clients/typescript/package-lock.json", root), "utf8")) as { version: string };
  assert.equal(pkg.version, workspace, "clients/typescript/package.json against hookd's version");
  assert.equal(lock.version, workspace, "package-lock.json against package.json");
});
