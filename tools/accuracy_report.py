#!/usr/bin/env python3
"""Writes docs/accuracy.md: perfloom's accuracy today, every number measured by the command named beside it.

    python3 tools/accuracy_report.py [--bin build/bin] [--out docs/accuracy.md] [--gpus ID,ID...] [--skip SECTION,...]

Run from the root of a clone after building (scripts/build.sh). Sections: holdout (perfloom eval, leave one GPU out,
retrains once per GPU: the long part, about 2-5 minutes per GPU on 2 cores), roofline (the ceiling against every
public measurement), whatif (traces' kernels moved between the two GPUs measured here), comm (the NCCL model against
measured collectives), step (whole forward steps against PyTorch benchmarks), tuner (the shipped tables' first choice
timed against cuBLASLt). The report is generated: edit this script or the tools, never the report.
"""
import argparse, datetime, json, os, platform, re, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTIONS = ["holdout", "roofline", "whatif", "comm", "step", "tuner"]
# GPUs with measurements in data/ (perfloom train's training_gpus), the most used first.
DEFAULT_GPUS = ["h100-sxm", "h200", "b200", "a100-sxm-80gb", "a100-pcie-40gb", "a100-pcie-80gb", "a40", "t4",
                "v100-pcie", "p100-pcie", "p4"]


def run(cmd, **kw):
    t0 = time.time()
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, OMP_WAIT_POLICY="passive"),
                       **kw)
    if r.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-4000:]}")
    return r, time.time() - t0


BIN_SHOWN = "build/bin"  # how the report names the programs, wherever --bin put them


def cmdline(cmd, bin_dir=None):
    def show(c):
        if bin_dir and os.path.isabs(c) and os.path.dirname(c) == bin_dir:
            return os.path.join(BIN_SHOWN, os.path.basename(c))
        return os.path.relpath(c, ROOT) if os.path.isabs(c) and c.startswith(ROOT) else c
    return " ".join(show(c) for c in cmd)


def demote(md, levels=1):
    """A tool's own Markdown report under this report's headings: each heading one level deeper, its title dropped."""
    out = []
    for line in md.splitlines():
        m = re.match(r"^(#+) (.*)", line)
        if m and len(m.group(1)) == 1:
            continue  # the tool's title: the section heading replaces it
        out.append(("#" * levels + line) if m else line)
    return "\n".join(out).strip() + "\n"


def pct(v):
    return "-" if v is None else f"{v:.1f}%"


def holdout(args, md):
    md.append("## Kernel latency on GPUs held out of training\n")
    md.append("Each GPU in turn is removed from the training data; the models are retrained without it and predict its "
              "measured kernels (`perfloom eval --holdout-gpu ID`, the cross-generation tier unless the GPU has a "
              "calibration sweep, then the target-measured tier). Errors are absolute percentage errors against the "
              "measured latency. *roofline*: the analytical time over a per-family efficiency fitted on the training "
              "GPUs; *habitat*: the same kernel measured on a training GPU, scaled by the two GPUs' roofline times "
              "(only where such a kernel exists; *covered* says how often).\n")
    md.append("| held-out GPU | tier | family | kernels | MAPE | median | p90 | roofline MAPE | habitat MAPE (covered) |")
    md.append("|---|---|---|---:|---:|---:|---:|---:|---:|")
    cmds = []
    for gpu in args.gpus:
        cmd = [os.path.join(args.bin, "perfloom"), "eval", "--holdout-gpu", gpu, "--data", "data", "--json"]
        r, secs = run(cmd)
        if r.returncode != 0:
            md.append(f"| {gpu} | - | - | - | {r.stderr.strip().splitlines()[-1]} | | | | |")
            continue
        j = json.loads(r.stdout)
        for fam, f in sorted(j["families"].items()):
            h = f["habitat"]
            cov = f" ({100.0 * h['kernels'] / f['kernels']:.0f}%)" if f["kernels"] else ""
            md.append(f"| {gpu} | {j['tier']} | {fam} | {f['kernels']} | {pct(f['learned']['mape'])} | "
                      f"{pct(f['learned']['median_ape'])} | {pct(f['learned']['p90_ape'])} | {pct(f['roofline']['mape'])} | "
                      f"{pct(h['mape']) if h['kernels'] else '-'}{cov if h['kernels'] else ''} |")
        cmds.append(f"`{cmdline(cmd, args.bin)}` ({secs:.0f} s)")
        print(f"holdout {gpu}: {secs:.0f} s", file=sys.stderr)
        with open(args.out, "w") as f:  # the held-out GPUs so far
            f.write("\n".join(md).rstrip() + "\n")
    md.append("\nCommands: " + "; ".join(cmds) + ".\n")


def tool_section(title, cmd, out_flag=None, stdout=False, intro=""):
    def section(args, md):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "report.md")
            full = [c.replace("{bin}", args.bin) for c in cmd] + ([out_flag, path] if out_flag else [])
            r, secs = run(full)
            text = r.stdout if stdout else open(path).read()
        md.append(f"## {title}\n")
        if intro:
            md.append(intro + "\n")
        md.append(f"Command: `{cmdline(full, args.bin).replace(path, 'OUT.md')}` ({secs:.0f} s).\n")
        md.append(demote(text))
        print(f"{title}: {secs:.0f} s", file=sys.stderr)
    return section


def tuner(args, md):
    checks = sorted(os.path.join("tests/data/tuner_check", f) for f in os.listdir(os.path.join(ROOT, "tests/data/tuner_check")))
    cmd = ["python3", "tools/tuner_check_score.py", "refit"] + checks
    r, _ = run(cmd)
    md.append("## GEMM tile configurations (`perfloom tune`)\n")
    md.append("The shipped H200 table's first choice and first three, timed on an H200 at random GEMMs it was not "
              "fitted on (bf16 and fp8e4m3, M 1-10,000, N 512-32,768), against the fastest of every configuration timed there (both "
              "tables' first three and cuBLASLt's first 8 heuristic results, the median of 3 timings each) and against "
              "cuBLASLt's default (its first heuristic result). A first choice cuBLASLt refuses counts as a miss. The "
              "H100's table has no such check in the tree.\n")
    md.append(f"Command: `python3 tools/tuner_check_score.py refit tests/data/tuner_check/*.csv.gz`.\n")
    md.append(r.stdout)


SECTION_FUNCS = {
    "holdout": holdout,
    "roofline": tool_section("The ceiling is a lower bound", ["{bin}/perfloom-roofline-check", "data/public"], "--report"),
    "whatif": tool_section("What-if of profiled kernels between the H100 and the H200",
                           ["{bin}/perfloom-whatif-eval", "--data", "data"], "--out"),
    "comm": tool_section("Collectives", ["{bin}/perfloom-comm-check", "data/nccl-h200/nccl.csv"], stdout=True),
    "step": tool_section("Whole forward steps", ["python3", "tools/step_check/compare.py"], "--out"),
    "tuner": tuner,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/bin"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/accuracy.md"))
    ap.add_argument("--gpus", default=",".join(DEFAULT_GPUS), help="held-out GPUs of the holdout section")
    ap.add_argument("--skip", default="", help="sections to leave out: " + ",".join(SECTIONS))
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.gpus = [g for g in args.gpus.split(",") if g]
    skip = {s for s in args.skip.split(",") if s}
    if skip - set(SECTIONS):
        raise SystemExit(f"--skip: unknown section(s) {sorted(skip - set(SECTIONS))}; sections: {','.join(SECTIONS)}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    md = ["# Accuracy", "",
          f"Generated by `python3 tools/accuracy_report.py` on {datetime.date.today().isoformat()} at commit `{commit}` "
          f"({platform.machine()}, {os.cpu_count()} cores); do not edit by hand: rerun it. Every number below is "
          "measured by the command named beside it, on the data in `data/` (training measurements) and `tests/data/` "
          "(checks). Sections left out of this run: " + (", ".join(sorted(skip)) or "none") + ".", ""]
    for s in SECTIONS:
        if s not in skip:
            SECTION_FUNCS[s](args, md)
            md.append("")
            with open(args.out, "w") as f:  # after every section, so that a long run stopped early keeps what it has
                f.write("\n".join(md).rstrip() + "\n")
    print(f"wrote {os.path.relpath(args.out, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
