#!/usr/bin/python3
"""Totals of the fuzzing runs recorded in build-fuzz/logs (docs/FUZZING.md).

usage: /usr/bin/python3 tools/fuzz/summary.py [LOGDIR]

Per target: the runs (logs), seconds fuzzed (libFuzzer's "Done N runs in S
second(s)", or executions / average rate for a run that ended on a finding),
executions, the most coverage a run reached (cov: edges, ft: features of our
instrumented code) and the findings (inputs libFuzzer wrote out).
"""
import glob
import os
import re
import sys


def main():
    logdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "build-fuzz", "logs")
    totals = {}
    for path in sorted(glob.glob(os.path.join(logdir, "fuzz_*.log")), key=os.path.getmtime):
        target = os.path.basename(path).split(".")[0]
        text = open(path, errors="replace").read()
        units = re.search(r"stat::number_of_executed_units:\s+(\d+)", text)
        rate = re.search(r"stat::average_exec_per_sec:\s+(\d+)", text)
        done = re.search(r"Done (\d+) runs in (\d+) second", text)
        if not units:
            continue
        n = int(units.group(1))
        secs = int(done.group(2)) if done else (n / max(1, int(rate.group(1))) if rate else 0)
        cov = re.findall(r"cov: (\d+) ft: (\d+)", text)
        t = totals.setdefault(target, {"runs": 0, "seconds": 0.0, "execs": 0, "cov": (0, 0), "findings": 0})
        t["runs"] += 1
        t["seconds"] += secs
        t["execs"] += n
        if cov:
            last = tuple(int(v) for v in cov[-1])
            t["cov"] = max(t["cov"], last)
        t["findings"] += len(re.findall(r"Test unit written to", text))
    print("| target | runs | time | executions | cov | ft | findings |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    all_secs = 0
    for target, t in sorted(totals.items()):
        all_secs += t["seconds"]
        print("| %s | %d | %d min %02d s | %d | %d | %d | %d |" % (
            target, t["runs"], t["seconds"] // 60, t["seconds"] % 60, t["execs"], t["cov"][0], t["cov"][1],
            t["findings"]))
    print("\ntotal: %d min %02d s" % (all_secs // 60, all_secs % 60))
    return 0


if __name__ == "__main__":
    sys.exit(main())
