"""Argo Workflows' own schema, for the tests that check a workflow flowfs
exports (output/workflow.argo.yaml, core/gexport.c).  Not a test file.

    from argo import validate_workflow
    assert validate_workflow(yaml.safe_load(text)) == []

The schema is the npm package @kubernetes-models/argo-workflows: models
generated from Argo's Go types (argo-workflows/v4 pkg/apis/workflow/
v1alpha1), each with a JSON-Schema validate() (ajv).  It is installed
once per pytest process into a temporary folder (removed at exit), with
npm's cache in there too, so nothing outside changes: about 8 s with the
registry at hand (28 packages; node 20 works though they ask for 22).
When npm cannot install it (no registry, no npm: about 2 s) the test
calling validate_workflow() is skipped, naming npm's error line.

What this schema checks is the shape: types, required fields (a
container needs a name: gexport writes "main"; a volume claim template
its apiVersion and kind).  It does not check what Argo's controller
checks beyond that (task and template name syntax, dependencies naming
tasks that exist, "{{...}}" references), nor unknown fields:
test_argo_schema.py and gexport's unit tests check those.
"""

import atexit
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

PACKAGE = "@kubernetes-models/argo-workflows@2.0.0"
NODE = "/usr/bin/node"
NPM = shutil.which("npm") or "/usr/bin/npm"
INSTALL_TIMEOUT = 600
# npm trusts only the CAs node carries; the system's store holds any a
# site adds (a TLS proxy's), as other clients here see it.
SYSTEM_CAS = "/etc/ssl/certs/ca-certificates.crt"

# An ES module (the package is ESM only): reads a JSON document on stdin
# and prints the list of schema errors as JSON, [] when it validates.
SCRIPT = r"""
import { Workflow } from "@kubernetes-models/argo-workflows/argoproj.io/v1alpha1";
import { readFileSync } from "node:fs";

const doc = JSON.parse(readFileSync(0, "utf8"));
let errors = [];
try {
  new Workflow(doc).validate();
} catch (e) {
  if (!Array.isArray(e.errors))
    throw e;
  errors = e.errors.map(x => `${x.instancePath || "/"}: ${x.message}` +
    (x.params && x.params.additionalProperty !== undefined
      ? ` (${x.params.additionalProperty})` : ""));
}
process.stdout.write(JSON.stringify(errors));
"""

# One install per process: the folder, or the reason to skip.
_installed = {}


def _npm_error(text):
    """The line of npm's output that says why it failed."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for key in ("npm error code", "npm ERR! code", "npm error", "npm ERR!"):
        for l in lines:
            if l.startswith(key) and len(l) > len(key) + 1:
                return l
    return lines[-1] if lines else "npm printed nothing"


def install():
    """The folder holding the package and the validator script; skips the
    calling test when it cannot be installed."""
    if "dir" not in _installed and "skip" not in _installed:
        _installed.update(_install())
    if "skip" in _installed:
        pytest.skip(_installed["skip"])
    return _installed["dir"]


def install_seconds():
    """How long the install took (None before it ran or when it failed)."""
    return _installed.get("seconds")


def _install():
    if not Path(NODE).exists() or not Path(NPM).exists():
        return {"skip": f"npm registry unreachable: no {NODE} or npm"}
    folder = Path(tempfile.mkdtemp(prefix="flowfs-argo-schema-"))
    atexit.register(shutil.rmtree, folder, True)
    env = dict(os.environ)
    if "NODE_EXTRA_CA_CERTS" not in env and Path(SYSTEM_CAS).exists():
        env["NODE_EXTRA_CA_CERTS"] = SYSTEM_CAS
    start = time.monotonic()
    try:
        # few retries: without a registry the test is skipped in seconds,
        # not minutes
        r = subprocess.run(
            [NPM, "install", "--prefix", str(folder), "--no-audit",
             "--no-fund", "--no-save", "--cache", str(folder / ".npm"),
             "--loglevel", "error", "--fetch-retries", "1",
             "--fetch-retry-mintimeout", "2000",
             "--fetch-retry-maxtimeout", "5000", "--fetch-timeout", "60000",
             PACKAGE],
            cwd=folder, env=env, capture_output=True, text=True,
            timeout=INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"skip": f"npm registry unreachable: npm install took more "
                        f"than {INSTALL_TIMEOUT} s"}
    if r.returncode != 0:
        return {"skip": "npm registry unreachable: " +
                        _npm_error(r.stderr + r.stdout)}
    (folder / "validate.mjs").write_text(SCRIPT)
    return {"dir": folder, "seconds": time.monotonic() - start}


def validate_workflow(doc):
    """Argo's schema errors for a Workflow document (a dict), as
    "<JSON pointer>: <message>" strings; [] when it validates."""
    folder = install()
    r = subprocess.run([NODE, str(folder / "validate.mjs")], cwd=folder,
                       input=json.dumps(doc), capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"the validator failed: {r.stderr.strip()}")
    return json.loads(r.stdout)
