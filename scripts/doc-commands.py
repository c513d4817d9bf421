#!/usr/bin/env python3
"""Runs the commands printed in README.md and docs/*.md, as printed (issue 26 item 8).

Convention (docs/architecture.md, "Commands in the documentation"):
- Every command in a code block fenced with ```sh is run; other blocks (```, ```json, indented)
  are not. A line ending in a backslash continues the command.
- A command is skipped, and listed with its reason, when its line says `# not-run: REASON`
  (GPU needed, too slow for CI, installs packages, ...), when the block's first line is
  `# not-run: REASON` (the whole block), when it has a literal `...` argument (a template), or
  when it shows optional arguments in brackets (`[--flag X]`, a usage synopsis).
- Commands run with bash in order, one file at a time, in a fresh directory per file that holds
  links to the repository's examples/, scripts/, bench/, docs/ and build/ (so relative paths work
  and the files they write land there), with BUILD/bin first on PATH. Under root, Open MPI's
  OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM) are set (what `--allow-run-as-root` does).
- `# expect-exit: N` on a command's line: the command answers "no" by design (exit 1, e.g. a
  refuted rule) and passes when it exits with N.
- A command fails on a non-zero exit status (other than its expect-exit) or when it runs longer than --timeout seconds; the
  failure prints the file and line, the command, its exit status and the end of its stderr.

Exit 0 when no command failed, 1 otherwise, 2 on usage errors. Prints "N passed, N failed,
N skipped" last.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

NOT_RUN = re.compile(r"#\s*not-run:\s*(.*)$")
EXPECT = re.compile(r"#\s*expect-exit:\s*(\d+)")


def commands(path):
    """Yields (line number, command text, skip reason or None) for every ```sh command in `path`."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        info = m.group(2)
        j = i + 1
        block = []
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            block.append((j + 1, lines[j]))
            j += 1
        i = j + 1
        if info != "sh":
            continue
        block_skip = None
        if block and NOT_RUN.match(block[0][1].strip()):
            block_skip = NOT_RUN.match(block[0][1].strip()).group(1).strip() or "marked"
        k = 0
        while k < len(block):
            ln, text = block[k]
            cmd = text
            while cmd.rstrip().endswith("\\") and k + 1 < len(block):
                k += 1
                cmd = cmd.rstrip()[:-1] + " " + block[k][1].strip()
            k += 1
            stripped = cmd.strip()
            if not stripped or stripped.startswith("#"):
                continue
            reason = block_skip
            nr = NOT_RUN.search(stripped)
            if reason is None and nr:
                reason = nr.group(1).strip() or "marked"
            if reason is None and re.search(r"(^|\s)\.\.\.(\s|$)", stripped):
                reason = "template (a '...' argument)"
            if reason is None and re.search(r"\[--", stripped):
                reason = "usage synopsis (optional arguments in brackets)"
            yield ln, stripped, reason


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True, help="the repository (README.md, docs/, examples/)")
    ap.add_argument("--build", required=True, help="the build directory (its bin/ holds p2v)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per command (default 60)")
    ap.add_argument("--list", action="store_true", help="list the commands and skips, run nothing")
    ap.add_argument("files", nargs="*", help="markdown files (default: README.md and docs/*.md)")
    a = ap.parse_args(argv)
    src, build = os.path.abspath(a.source), os.path.abspath(a.build)
    if not os.path.isfile(os.path.join(build, "bin", "p2v")):
        print(f"doc-commands: error: {build}/bin/p2v does not exist", file=sys.stderr)
        return 2
    files = a.files or ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md"))
    env = dict(os.environ)
    env["PATH"] = os.path.join(build, "bin") + os.pathsep + env.get("PATH", "")
    if os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    passed = failed = skipped = 0
    t0 = time.time()
    for f in files:
        cmds = list(commands(os.path.join(src, f)))
        if not cmds:
            continue
        work = tempfile.mkdtemp(prefix="p2v-doc-")
        try:
            for d in ("examples", "scripts", "bench", "docs"):
                os.symlink(os.path.join(src, d), os.path.join(work, d))
            os.symlink(build, os.path.join(work, "build"))
            for ln, cmd, reason in cmds:
                where = f"{f}:{ln}"
                if reason:
                    skipped += 1
                    print(f"skip  {where}: {cmd[:100]}  ({reason})")
                    continue
                if a.list:
                    print(f"run   {where}: {cmd}")
                    continue
                start = time.time()
                try:
                    p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=work, env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=a.timeout)
                    rc, err = p.returncode, p.stderr.decode(errors="replace")
                except subprocess.TimeoutExpired as e:
                    rc, err = "timeout", (e.stderr or b"").decode(errors="replace")
                secs = time.time() - start
                em = EXPECT.search(cmd)
                if rc == (int(em.group(1)) if em else 0):
                    passed += 1
                    print(f"ok    {where} ({secs:.1f} s): {cmd[:100]}")
                else:
                    failed += 1
                    tail = "\n".join(err.strip().split("\n")[-15:])
                    print(f"FAIL  {where} ({secs:.1f} s, exit {rc}): {cmd}\n      stderr (end):\n"
                          + "\n".join("        " + line for line in tail.split("\n")))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print(f"doc-commands: {time.time() - t0:.1f} s")
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
