#!/usr/bin/env python3
"""Which host lines each test runs, and whether the `numerics` and `covered` labels hold.

The sanitizer phase of tools/run-tests.sh leaves out the tests labelled `numerics` (they test
accuracy) and `covered` (costly there, and the rest of the phase runs their lines): every host
line they run must be run by a test the sanitizer build does run (and `bench`, not checked here).
This script measures that: a coverage build (gcc --coverage, -O1) in build-coverage/, every test
run as its own ctest with its own gcov data (two at a time, the Mesa shader cache of build/
shared), then for each test the lines of src/ and tools/ it ran. It prints the lines a `numerics`
or `covered` test runs that no sanitizer-phase test runs (there should be none), and each
sanitizer-phase test's lines that no other test of that phase runs. With --prune, the
sanitizer-phase tests that could be left out together, costliest first (by build-asan/'s ctest
cost data), none of whose lines would then go unrun, leaving out the kinds that stay whatever
their lines (KEPT): the candidates for `covered`. About 6 minutes on 2 cores with a warm Mesa
cache.

usage: tools/coverage-by-test.py [--build DIR] [--only REGEX] [--prune]   (from the repository root)
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

SANITIZED = ["-LE", "numerics|covered|bench"]  # the sanitizer phase's selection (tools/run-tests.sh)
# Sanitizer-phase tests that stay there whatever their lines (docs/TESTING.md): the fault walks, the
# random and tree cache runs, the link and loader checks, the fuzz replays, the consumer programs.
KEPT = re.compile(r"faults_|kv_cache_random_ops|cached_tree|symbols_|fuzz_replay_|llama_decode_")


def test_names(build, selection):
    out = subprocess.run(["ctest", "--test-dir", build, "-N", *selection], capture_output=True, text=True,
                         check=True).stdout
    return re.findall(r"Test +#\d+: (\S+)", out)


def run_one(build, gcda_root, name):
    env = dict(os.environ, GCOV_PREFIX=os.path.join(gcda_root, name), GCOV_PREFIX_STRIP="0",
               VKATTN_FAULT_STRIDE="10", VKATTN_FAULT_FIRST="1")  # as in the sanitizer phase
    r = subprocess.run(["ctest", "--test-dir", build, "-R", f"^{re.escape(name)}$"], env=env,
                       capture_output=True, text=True)
    return name, r.returncode


def lines_of(build, src, gcda_root, name):
    """The src/ and tools/ lines (path:line) that test `name` ran."""
    root = os.path.join(gcda_root, name) + os.path.abspath(build)
    covered = set()
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".gcda"):
                continue
            gcda = os.path.join(d, f)
            gcno = os.path.join(build, os.path.relpath(gcda, root))[:-5] + ".gcno"
            if not os.path.exists(gcno):
                continue
            shutil.copy(gcno, gcda[:-5] + ".gcno")
            with tempfile.TemporaryDirectory() as tmp:
                out = subprocess.run(["gcov", "-t", "-j", gcda], cwd=tmp, capture_output=True, text=True).stdout
            for text in out.splitlines():
                if not text.startswith("{"):
                    continue
                js = json.loads(text)
                for fobj in js["files"]:
                    path = os.path.relpath(os.path.join(js.get("current_working_directory", build), fobj["file"]), src)
                    if path.startswith(("src/", "tools/")):
                        covered.update(f"{path}:{l['line_number']}" for l in fobj["lines"] if l["count"] > 0)
    return covered


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build-coverage")
    ap.add_argument("--only", help="run only the tests whose names match this regex (a quick look: the numerics "
                    "verdict needs every sanitizer-phase test)")
    ap.add_argument("--prune", action="store_true", help="also list the sanitizer-phase tests that could be left "
                    "out together, costliest first")
    args = ap.parse_args()
    if args.prune and args.only:
        ap.error("--prune needs every sanitizer-phase test's lines: leave out --only")
    src = os.getcwd()
    build = os.path.abspath(args.build)
    subprocess.run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_C_FLAGS=--coverage -O1",
                    "-DCMAKE_EXE_LINKER_FLAGS=--coverage", "-DCMAKE_SHARED_LINKER_FLAGS=--coverage",
                    f"-DVKATTN_SHADER_CACHE_DIR={src}/build/mesa_shader_cache"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2)], check=True, stdout=subprocess.DEVNULL)
    # the consumer builds are left out of sanitizer builds (tests/consumer/tests.cmake), and a coverage
    # build's library needs gcov's runtime in every consumer
    sanitized = [n for n in test_names(build, SANITIZED) if not n.startswith("consumer_")]
    numerics = test_names(build, ["-L", "numerics|covered", "-LE", "bench"])
    names = [n for n in sanitized + numerics if not args.only or re.search(args.only, n)]
    gcda_root = os.path.join(build, "gcda-by-test")
    shutil.rmtree(gcda_root, ignore_errors=True)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for name, rc in pool.map(lambda n: run_one(build, gcda_root, n), names):
            if rc != 0:
                print(f"{name}: the test failed (exit {rc}); its lines are still counted", file=sys.stderr)
    lines = {n: lines_of(build, src, gcda_root, n) for n in names}

    by_line = defaultdict(set)
    for n in sanitized:
        for key in lines.get(n, ()):
            by_line[key].add(n)
    bad = 0
    print("numerics and covered tests: host lines no sanitizer-phase test runs")
    for n in numerics:
        if n not in lines:
            continue
        outside = sorted(k for k in lines[n] if k not in by_line)
        bad += bool(outside)
        print(f"  {n}: {len(lines[n])} lines, {len(outside)} outside" + (f": {', '.join(outside[:8])}" if outside else ""))
    print("sanitizer-phase tests: lines no other test of the phase runs")
    for n in sanitized:
        if n in lines:
            unique = sum(1 for k in lines[n] if by_line[k] == {n})
            print(f"  {n}: {len(lines[n])} lines, {unique} only here")
    if args.prune:
        prune(src, sanitized, lines, by_line)
    return 1 if bad and not args.only else 0


def prune(src, sanitized, lines, by_line):
    """Greedy, costliest first: a test goes when every line it runs is still run by a test that stays."""
    cost = {}
    data = os.path.join(src, "build-asan", "Testing", "Temporary", "CTestCostData.txt")
    if os.path.exists(data):
        for row in open(data):
            fields = row.split()
            if len(fields) == 3:
                cost[fields[0]] = float(fields[2])
    else:
        print(f"(no {data}: run the sanitizer build's tests once for their costs; ctest's order here)")
    runners = {key: len(names) for key, names in by_line.items()}
    print("sanitizer-phase tests the rest of the phase covers, if left out together (build-asan/'s ctest costs):")
    for n in sorted((n for n in sanitized if n in lines), key=lambda n: -cost.get(n, 0)):
        if KEPT.match(n) or not lines[n]:
            continue  # kept whatever its lines, or no host line for coverage to judge
        if any(runners[key] < 2 for key in lines[n]):
            continue  # a line no test that stays runs
        for key in lines[n]:
            runners[key] -= 1
        print(f"  {n}: {cost.get(n, 0):.1f} s, {len(lines[n])} lines")


if __name__ == "__main__":
    sys.exit(main())
