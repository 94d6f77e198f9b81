#!/usr/bin/python3
"""Run every file of a corpus through `tilewave info` and `tilewave pyramid`
and classify what happened: the acceptance check of issue 14.

  /usr/bin/python3 tools/fuzz/corpus/run_corpus.py --tilewave BIN CORPUSDIR [CORPUSDIR ...]
      [--jobs 2] [--timeout 60] [--rss-limit-mb 1024] [--rss-kill-mb 4096]
      [--memory 256M] [--threads N] [--json summary.json] [--examples 5]

For each file (found recursively; names starting with '.' and *.json,
*.jsonl, *.md, *.txt, *.log skipped), in order:
  BIN info IN
  BIN pyramid IN out.tif --memory 256M
  BIN pyramid IN out.tif --memory 256M --threads N     (only with --threads)
Each command runs in a fresh empty work folder (its cwd, TMPDIR=work/tmp),
on a copy of the input at work/in/NAME, with a wall-clock timeout, in its own
process group. Peak RSS is os.wait4's ru_maxrss of the child; a watchdog
polls VmHWM and kills the group past --rss-kill-mb (0: never), so a lying
header cannot take the machine down; such a run counts as RSS. Linux keeps
the high-water mark of the forking process across exec, so ru_maxrss is the
child's own only when it exceeds the runner's (~40 MB); below that the peak
reported is the polled VmHWM, a lower bound (peak_exact false in the JSON).

Classes of a run (a run can have several; the bad ones are upper case):
  ok        exit 0, nothing on stderr but 'tilewave: warning:' lines
  error     exit 1 or 2 with exactly one stderr line starting 'tilewave: error:'
  CRASH     killed by a signal, or sanitizer output on stderr
  HANG      still running after --timeout seconds (killed)
  RSS       peak RSS over --rss-limit-mb (or killed by the watchdog)
  MESSY     non-zero exit without one clean error line, or stderr noise
            (GLib/libtiff warnings, ...; 'tilewave: warning:' lines are
            allowed) on a success
  LEFTOVER  any file left in the work folder (TMPDIR and the input's folder
            included) other than the input, and out.tif only after a success
  MODIFIED  the input's bytes changed (SHA-256 before/after)
  NOTE      exit 0 but out.tif missing or not readable by tifffile, or a
            silent conversion: out.tif's level 0 (pyramid) or the 'pixels:'
            line (info) gives another sample type or count than tifffile
            reads in the input's first directory (palette -> u8 x3 excepted;
            inputs tifffile cannot read are not compared)

Writes a JSON summary of every run (--json, default corpus-summary.json in
the cwd) and prints the counts per class and command; then, per bad class,
its runs grouped by signature (the reason and the last stderr line, paths
and numbers taken out) and, for the --examples commonest signatures, the
first run with the command that reproduces it. Exits 1 when any bad class
is non-empty, 0 otherwise. Runs --jobs files at once; needs tifffile.
"""
import argparse
import concurrent.futures
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import tifffile

BAD = ("CRASH", "HANG", "RSS", "MESSY", "LEFTOVER", "MODIFIED", "NOTE")
GOOD = ("ok", "error")
SKIP_SUFFIXES = (".json", ".jsonl", ".md", ".txt", ".log")
SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
                       r"ThreadSanitizer|MemorySanitizer|runtime error:|^==\d+==ERROR", re.M)
CLEAN_ERROR = "tilewave: error:"
OWN_WARNING = "tilewave: warning:"
# tifffile can decode these without imagecodecs (which Debian lacks)
DECODABLE = {"NONE", "ADOBE_DEFLATE", "DEFLATE", "LZMA", "PACKBITS"}

logging.getLogger("tifffile").setLevel(logging.CRITICAL)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def list_files(root):
    """Everything under root, relative; folders end in '/'."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        out += [os.path.relpath(os.path.join(dirpath, n), root) + "/" for n in dirnames]
        out += [os.path.relpath(os.path.join(dirpath, n), root) for n in filenames]
    return sorted(out)


def corpus_files(dirs):
    files = []
    for d in dirs:
        if os.path.isfile(d):
            files.append(os.path.abspath(d))
            continue
        for dirpath, dirnames, filenames in os.walk(d):
            dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))
            for name in sorted(filenames):
                if name.startswith(".") or name.endswith(SKIP_SUFFIXES):
                    continue
                files.append(os.path.abspath(os.path.join(dirpath, name)))
    return files


def vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def run_limited(argv, cwd, env, timeout, kill_kb):
    """Run argv; return dict(rc, signal, wall_s, peak_kb, hung, rss_killed,
    stdout, stderr). The child gets its own process group; on timeout or the
    RSS watchdog the whole group is SIGKILLed."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        floor_kb = vm_hwm_kb("self")
        start = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                             stdout=out, stderr=err, start_new_session=True)
        hung = rss_killed = False
        peak_polled = 0
        delay = 0.001
        while os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            elapsed = time.monotonic() - start
            peak_polled = max(peak_polled, vm_hwm_kb(p.pid))
            if kill_kb and peak_polled > kill_kb and not rss_killed:
                rss_killed = True
                os.killpg(p.pid, signal.SIGKILL)
            if elapsed > timeout and not hung:
                hung = True
                os.killpg(p.pid, signal.SIGKILL)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        wall = time.monotonic() - start
        # the child is a zombie, so its group id is still ours: end any
        # stray member of it before reaping
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = -1  # reaped here; keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        return {
            "rc": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "wall_s": round(wall, 3),
            # ru_maxrss is exact only above the runner's own high-water mark
            # (see the top); below it, the polled VmHWM is a lower bound
            "peak_kb": usage.ru_maxrss if usage.ru_maxrss > floor_kb else peak_polled,
            "peak_exact": usage.ru_maxrss > floor_kb,
            "hung": hung,
            "rss_killed": rss_killed,
            "stdout": out.read(64 << 10).decode("utf-8", "replace"),
            "stderr": err.read(64 << 10).decode("utf-8", "replace"),
        }


SHORT_DTYPE = {"uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
               "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
               "float16": "f16", "float32": "f32", "float64": "f64", "bool": "u1"}
INFO_PIXELS = re.compile(r"^pixels:\s+(\w+) x(\d+)", re.M)


def pixel_format(page):
    return f"{SHORT_DTYPE.get(str(page.dtype), str(page.dtype))} x{page.samplesperpixel}"


def input_format(path):
    """(pixel format of directory 0 as tifffile reads it, is it a palette
    image), or None when tifffile cannot read the input: then nothing is
    compared."""
    try:
        with tifffile.TiffFile(path) as t:
            p = t.pages[0]
            if p.dtype is None:   # a sample type tifffile cannot decode either
                return None
            return pixel_format(p), p.photometric == tifffile.PHOTOMETRIC.PALETTE
    except Exception:  # noqa: BLE001 -- mutants tifffile cannot read are not compared
        return None


def format_note(in_path, got, where):
    fmt = input_format(in_path)
    if fmt is None or got == fmt[0] or (fmt[1] and got == "u8 x3"):
        return ""
    return f"pixel format changed: input {fmt[0]}, {where} {got}"


def check_info(stdout, in_path):
    """'' unless info's 'pixels:' line disagrees with the input."""
    m = INFO_PIXELS.search(stdout)
    return format_note(in_path, f"{m.group(1)} x{m.group(2)}", "info says") if m else ""


def check_output(out_path, in_path):
    """'' when out.tif is fine, else why it is a NOTE."""
    if not os.path.isfile(out_path):
        return "exit 0 but no out.tif"
    try:
        with tifffile.TiffFile(out_path) as t:
            pages = list(t.pages)
            if not pages:
                return "out.tif has no directories"
            for p in pages:
                if 0 in p.shape:
                    return f"out.tif directory of shape {p.shape}"
            smallest = min(pages[:16], key=lambda p: p.size)
            if smallest.compression.name in DECODABLE and smallest.size < (64 << 20):
                smallest.asarray()
            out_fmt = pixel_format(pages[0])
    except Exception as e:  # noqa: BLE001 -- any failure to read is the finding
        return f"tifffile cannot read out.tif: {type(e).__name__}: {str(e)[:200]}"
    return format_note(in_path, out_fmt, "out.tif")


def classify(res, work, in_rel, out_name, in_hash, in_copy, rss_limit_kb, kill_kb):
    """{class: why} for one run, in the order found."""
    found = {}

    def flag(cls, why):
        found[cls] = f"{found[cls]}, {why}" if cls in found else why

    rc, stderr = res["rc"], res["stderr"]
    lines = [l for l in stderr.splitlines() if l.strip()]
    noise = [l for l in lines if not l.startswith(OWN_WARNING)]
    if res["hung"]:
        flag("HANG", f"killed after {res['wall_s']:.0f} s")
    if res["rss_killed"]:
        flag("RSS", f"killed by the watchdog past {kill_kb // 1024} MB")
    elif res["peak_kb"] > rss_limit_kb:
        flag("RSS", f"peak RSS {res['peak_kb'] // 1024} MB")
    killed_by_us = res["hung"] or res["rss_killed"]
    if res["signal"] is not None and not killed_by_us:
        flag("CRASH", f"signal {signal.Signals(res['signal']).name}")
    if SANITIZER.search(stderr):
        flag("CRASH", "sanitizer report")
    success = rc == 0 and not killed_by_us
    if not killed_by_us and "CRASH" not in found:
        if rc == 0 and noise:
            flag("MESSY", "stderr noise on success")
        elif rc in (1, 2) and not (len(lines) == 1 and lines[0].startswith(CLEAN_ERROR)):
            flag("MESSY", f"exit {rc} with {len(lines)} stderr lines")
        elif rc not in (0, 1, 2):
            flag("MESSY", f"exit {rc}")
    expected = {in_rel, "in/", "tmp/"}
    if success and out_name:
        expected.add(out_name)
    extra = [f for f in list_files(work) if f not in expected]
    if extra:
        flag("LEFTOVER", "left " + ", ".join(extra[:4]) + (" ..." if len(extra) > 4 else "")
             + (" (after the runner's SIGKILL)" if killed_by_us else ""))
    if not os.path.isfile(in_copy) or sha256(in_copy) != in_hash:
        flag("MODIFIED", "input changed")
    if success and not found:
        note = (check_output(os.path.join(work, out_name), in_copy) if out_name
                else check_info(res["stdout"], in_copy))
        if note:
            flag("NOTE", note)
    if not found:
        found["ok" if rc == 0 else "error"] = ""
    return found


def signature(run, cls):
    """What a bad run looks like with paths and numbers taken out (its reason
    for cls and its last stderr line that is not our warning), so that runs
    with one cause group together."""
    lines = [l for l in run["stderr"].splitlines() if l.strip() and not l.startswith(OWN_WARNING)]
    text = (run["reasons"][cls] + " | " + (lines[-1] if lines else "")).strip(" |")
    text = re.sub(r"(/[^\s:'\"]+)+", "PATH", text)
    text = re.sub(r"\.out\.tif\.tw-\S+?\.(tmp|raster)", r".out.tif.tw-*.\1", text)
    if cls != "NOTE":           # a NOTE's numbers are its pixel types: keep them
        text = re.sub(r"\d+", "N", text)
    return text[:160]


def commands(args):
    mem = ["--memory", args.memory]
    cmds = [("info", ["info", "{in}"], None),
            ("pyramid", ["pyramid", "{in}", "out.tif", *mem], "out.tif")]
    if args.threads:
        cmds.append((f"pyramid-t{args.threads}",
                     ["pyramid", "{in}", "out.tif", *mem, "--threads", str(args.threads)], "out.tif"))
    return cmds


def repro(binary, argv_tail, path):
    tail = " ".join(shlex.quote(path) if a == "{in}" else shlex.quote(a) for a in argv_tail)
    return f"cd \"$(mktemp -d)\" && {shlex.quote(binary)} {tail}; echo \"exit $?\"; ls -A"


def run_file(path, args, workroot, cmds):
    name = os.path.basename(path)
    in_hash = sha256(path)
    results = []
    for label, tail, out_name in cmds:
        work = tempfile.mkdtemp(prefix="run-", dir=workroot)
        os.makedirs(os.path.join(work, "in"))
        os.makedirs(os.path.join(work, "tmp"))
        in_rel = os.path.join("in", name)
        in_copy = os.path.join(work, in_rel)
        shutil.copyfile(path, in_copy)
        argv = [args.tilewave] + [in_copy if a == "{in}" else a for a in tail]
        env = dict(os.environ, TMPDIR=os.path.join(work, "tmp"))
        res = run_limited(argv, work, env, args.timeout, args.rss_kill_mb * 1024)
        reasons = classify(res, work, in_rel, out_name, in_hash, in_copy,
                           args.rss_limit_mb * 1024, args.rss_kill_mb * 1024)
        bad = any(c in BAD for c in reasons)
        results.append({
            "file": path, "command": label, "classes": list(reasons), "reasons": reasons,
            "rc": res["rc"], "signal": res["signal"], "wall_s": res["wall_s"],
            "peak_rss_mb": round(res["peak_kb"] / 1024, 1),
            "peak_exact": res["peak_exact"],
            "stderr": res["stderr"][:4000 if bad else 300],
            "repro": repro(args.tilewave, tail, path),
        })
        shutil.rmtree(work, ignore_errors=True)
    # the corpus file itself must never change either
    if sha256(path) != in_hash:
        results[-1]["classes"].append("MODIFIED")
        results[-1]["reasons"]["MODIFIED"] = "the corpus file itself changed"
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilewave", required=True, help="the tilewave binary")
    ap.add_argument("corpus", nargs="+", help="folders (searched recursively) or files")
    ap.add_argument("--jobs", type=int, default=2, help="files run at once (default 2)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per command (default 60)")
    ap.add_argument("--rss-limit-mb", type=int, default=1024, help="RSS class threshold (default 1024)")
    ap.add_argument("--rss-kill-mb", type=int, default=4096,
                    help="kill a run whose RSS passes this (default 4096; 0: never)")
    ap.add_argument("--memory", default="256M", help="pyramid --memory (default 256M)")
    ap.add_argument("--threads", type=int, default=0, help="also run pyramid with --threads N")
    ap.add_argument("--json", default="corpus-summary.json", help="summary file")
    ap.add_argument("--examples", type=int, default=5, help="examples printed per bad class")
    ap.add_argument("--workdir", default=None, help="where the work folders go (default: a temp folder)")
    args = ap.parse_args()
    args.tilewave = os.path.abspath(args.tilewave) if os.path.sep in args.tilewave else args.tilewave
    if shutil.which(args.tilewave) is None:
        sys.exit(f"run_corpus: no executable {args.tilewave}")

    files = corpus_files(args.corpus)
    if not files:
        sys.exit("run_corpus: no files in " + " ".join(args.corpus))
    cmds = commands(args)
    workroot = tempfile.mkdtemp(prefix="tw-corpus-", dir=args.workdir)
    results, lock = [], threading.Lock()
    start = time.monotonic()
    done = 0
    try:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_file, f, args, workroot, cmds) for f in files]
            for fut in concurrent.futures.as_completed(futures):
                with lock:
                    results.extend(fut.result())
                    done += 1
                    if done % 200 == 0 or done == len(files):
                        print(f"[{done}/{len(files)}] {time.monotonic() - start:.0f} s",
                              file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    results.sort(key=lambda r: (r["file"], [c[0] for c in cmds].index(r["command"])))

    labels = [c[0] for c in cmds]
    counts = {lab: {c: 0 for c in GOOD + BAD} for lab in labels}
    for r in results:
        for c in r["classes"]:
            counts[r["command"]][c] += 1
    bad_files = sorted({r["file"] for r in results if any(c in BAD for c in r["classes"])})
    summary = {
        "tilewave": args.tilewave, "corpus": args.corpus, "files": len(files),
        "options": {k: getattr(args, k) for k in ("jobs", "timeout", "rss_limit_mb", "rss_kill_mb",
                                                   "memory", "threads")},
        "wall_s": round(time.monotonic() - start, 1),
        "counts": counts, "bad_files": len(bad_files), "runs": results,
    }
    with open(args.json, "w") as f:
        json.dump(summary, f, indent=1)

    print(f"{len(files)} files, {len(results)} runs, {summary['wall_s']} s; summary in {args.json}")
    print(f"{'class':10s}" + "".join(f"{lab:>14s}" for lab in labels))
    for c in GOOD + BAD:
        print(f"{c:10s}" + "".join(f"{counts[lab][c]:14d}" for lab in labels))
    print(f"files with a bad run: {len(bad_files)}")
    for c in BAD:
        groups = {}
        for r in results:
            if c in r["classes"]:
                groups.setdefault(signature(r, c), []).append(r)
        if not groups:
            continue
        ranked = sorted(groups.items(), key=lambda g: -len(g[1]))
        print(f"\n== {c}: {sum(len(g) for _, g in ranked)} runs, {len(ranked)} signatures; "
              f"the first run of the {min(len(ranked), args.examples)} commonest:")
        for sig, runs in ranked[:args.examples]:
            r = runs[0]
            print(f"  [{len(runs)}x] {sig}")
            print(f"    {r['file']} [{r['command']}] rc={r['rc']}, {r['peak_rss_mb']} MB, {r['wall_s']} s")
            print(f"    repro: {r['repro']}")
    sys.exit(1 if bad_files else 0)


if __name__ == "__main__":
    main()
