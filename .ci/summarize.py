#!/usr/bin/env python3
"""Reads `go test -json` on stdin, passes the test output through, and ends
with a summary: every failed test, every skipped test with its reason, the
slowest packages against the per-binary timeout, and the totals.

Usage: go test -json -timeout 8m ./... | .ci/summarize.py --timeout 480
Exits 1 when a test or a package failed (or the input held no package)."""

import argparse
import json
import signal
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=600, help="the per-binary timeout, seconds")
    args = ap.parse_args()

    output = {}  # (pkg, test) -> lines
    failed, skipped = [], []
    pkg_time, pkg_failed = {}, set()
    passed = 0
    def report(*_):
        # Also when CI is cut off (SIGTERM, SIGINT, SIGHUP): what was
        # counted so far, with every failure, before going.
        code = summarize(args, output, failed, skipped, pkg_time, pkg_failed, passed)
        if _:
            print("\n== cut off by a signal before the tests ended: the counts above are partial")
            sys.stdout.flush()
            sys.exit(1)
        return code

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, report)
    for line in sys.stdin:
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            sys.stdout.write(line)  # build errors come as plain text
            continue
        pkg, test, action = ev.get("Package", ""), ev.get("Test"), ev.get("Action")
        if action == "output":
            out = ev.get("Output", "")
            if test is None:
                # The package's own lines ("ok ... 12.3s", "FAIL ...").
                if not out.startswith(("=== ", "PASS\n", "FAIL\n")):
                    sys.stdout.write(out)
            else:
                output.setdefault((pkg, test), []).append(out)
            continue
        if test is None:
            if action in ("pass", "fail"):
                pkg_time[pkg] = ev.get("Elapsed", 0)
                if action == "fail":
                    pkg_failed.add(pkg)
            continue
        if action == "fail":
            failed.append((pkg, test))
        elif action == "skip":
            lines = [l.strip() for l in output.get((pkg, test), []) if l.strip() and not l.startswith(("=== ", "--- SKIP"))]
            reason = lines[-1] if lines else "(no reason given)"
            # "file_test.go:12: reason" -> "reason"
            if ".go:" in reason.split(" ")[0]:
                reason = reason.split(" ", 1)[1] if " " in reason else reason
            skipped.append((pkg, test, reason))
        elif action == "pass":
            passed += 1
    return report()


def summarize(args, output, failed, skipped, pkg_time, pkg_failed, passed) -> int:
    for pkg, test in failed:
        print(f"\n--- FAIL {pkg} {test}")
        for l in output.get((pkg, test), []):
            sys.stdout.write("    " + l)

    # Subtests skipped for their parent's reason say nothing new.
    top = [(p, t, r) for (p, t, r) in skipped if "/" not in t]
    helpers = {"TestHelperCLI"}
    top = [s for s in top if s[1] not in helpers]
    print(f"\n== skipped tests: {len(top)}")
    for pkg, test, reason in sorted(top):
        print(f"  {pkg.replace('github.com/pipebench/pipebench', '.') or '.'} {test}: {reason}")

    print("\n== slowest packages (limit per test binary: %ds)" % args.timeout)
    for pkg, secs in sorted(pkg_time.items(), key=lambda kv: -kv[1])[:8]:
        share = 100 * secs / args.timeout if args.timeout else 0
        print(f"  {secs:7.1f}s  {share:4.0f}%  {pkg}")

    print(f"\n== {passed} passed, {len(failed)} failed, {len(skipped)} skipped; {len(pkg_time)} packages, {len(pkg_failed)} failed")
    if not pkg_time:
        print("no package was tested: see the output above")
        return 1
    return 1 if failed or pkg_failed else 0


if __name__ == "__main__":
    sys.exit(main())
