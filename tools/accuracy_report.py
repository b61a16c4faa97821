#!/usr/bin/env python3
"""Writes docs/accuracy.md: perfloom's accuracy today, every number measured by the command named beside it.

    python3 tools/accuracy_report.py [--bin build/bin] [--out docs/accuracy.md] [--gpus ID,ID...] [--skip SECTION,...]
                                     [--sections SECTION,...]

Run from the root of a clone after building (scripts/build.sh). Sections: holdout (perfloom eval, leave one GPU out,
retrains once per GPU: the long part, about 2-5 minutes per GPU on 2 cores), holdout_arch (leave one architecture
out, the same per architecture), roofline (the ceiling against every
public measurement), whatif (traces' kernels moved between the two GPUs measured here), traces (the share of real
traces' kernel time the what-if has a shape for), comm (the NCCL model against measured collectives), step (whole
forward steps against PyTorch benchmarks), sustained (the sustained-clock curves of GPUs nobody here
measured beside public GEMM tables), moe (the simulator's MoE layer against one measured on an H200), moe_model and moe_tune (the moe family
and `tune --moe` against the fused-MoE sweep), tuner (the shipped tables' first choice
timed against cuBLASLt), serving (perfloom simulate against published serving benchmarks, the rows of
tests/data/serving_published.csv). The report is generated: edit this script or the tools, never the report.

--sections runs only the sections named and replaces each in the existing report in place (a section not there yet goes
where the section order puts it); every other byte of the report stays as it was, its header included.
"""
import argparse, csv, datetime, json, os, platform, re, shlex, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTIONS = ["holdout", "holdout_arch", "roofline", "whatif", "traces", "comm", "step", "sustained", "moe", "moe_model", "moe_tune", "tuner", "serving"]
# GPUs with measurements in data/ (perfloom train's training_gpus), the most used first.
DEFAULT_GPUS = ["h100-sxm", "h200", "b200", "a100-sxm-80gb", "a100-pcie-40gb", "a100-pcie-80gb", "a40", "l40s",
                "rtx-pro-6000-server", "t4", "v100-pcie", "p100-pcie", "p4"]
# Architectures with measurements, as `perfloom eval --holdout-arch` names them (sm100 and sm120 keep datacenter and
# RTX Blackwell apart: different dies, different kernels).
DEFAULT_ARCHS = ["hopper", "sm100", "sm120", "ampere", "ada", "turing", "volta", "pascal"]


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


def ratio(v):
    """A median predicted / measured time: x1.34 means the predictions run 34% slow."""
    return "-" if v is None else f"x{v:.2f}"


def holdout_table(args, md, held_out, flag, column):
    md.append(f"| held-out {column} | tier | family | kernels | MAPE | median | p90 | pred/meas | roofline MAPE "
              "(pred/meas) | habitat MAPE (covered) |")
    md.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    cmds = []
    impl_rows = []  # (label, "family implementation", stats) where a held-out family runs more than one
    for what in held_out:
        cmd = [os.path.join(args.bin, "perfloom"), "eval", flag, what, "--data", "data", "--json"]
        r, secs = run(cmd)
        if r.returncode != 0:
            md.append(f"| {what} | - | - | - | {r.stderr.strip().splitlines()[-1]} | | | | | |")
            continue
        j = json.loads(r.stdout)
        label = what if flag == "--holdout-gpu" else f"{what} ({', '.join(j['held_out_gpus'])})"
        for fam, f in sorted(j["families"].items()):
            h = f["habitat"]
            cov = f" ({100.0 * h['kernels'] / f['kernels']:.0f}%)" if f["kernels"] else ""
            md.append(f"| {label} | {j['tier']} | {fam} | {f['kernels']} | {pct(f['learned']['mape'])} | "
                      f"{pct(f['learned']['median_ape'])} | {pct(f['learned']['p90_ape'])} | "
                      f"{ratio(f['learned'].get('median_ratio'))} | {pct(f['roofline']['mape'])} "
                      f"({ratio(f['roofline'].get('median_ratio'))}) | "
                      f"{pct(h['mape']) if h['kernels'] else '-'}{cov if h['kernels'] else ''} |")
        by_impl = j.get("by_implementation", {})
        for fam in sorted({k.split(" ", 1)[0] for k in by_impl}):
            mine = sorted(k for k in by_impl if k.split(" ", 1)[0] == fam)
            if len(mine) > 1 or any(not k.endswith(" engine default") for k in mine):
                impl_rows += [(label, k, by_impl[k]) for k in mine]
        cmds.append(f"`{cmdline(cmd, args.bin)}` ({secs:.0f} s)")
        print(f"{flag} {what}: {secs:.0f} s", file=sys.stderr)
        with open(args.out + ".partial", "w") as f:  # the held-out ones so far, should a long run stop early
            f.write("\n".join(md).rstrip() + "\n")
    if impl_rows:
        md.append(f"\nThe same by the kernels' implementation, where a held-out family ran more than one or not the "
                  "engine's default (the public tables' `kernel_source`: `triton`, `trtllm_mha`; perfloom's own "
                  "FlashAttention-2 and cuDNN probes). An implementation no training row has is predicted as the "
                  "engine's default kernel.\n")
        md.append(f"| held-out {column} | family | implementation | kernels | MAPE | median | p90 |")
        md.append("|---|---|---|---:|---:|---:|---:|")
        for label, key, s in impl_rows:
            fam, impl = key.split(" ", 1)
            md.append(f"| {label} | {fam} | {impl} | {s['kernels']} | {pct(s['mape'])} | {pct(s['median_ape'])} | "
                      f"{pct(s['p90_ape'])} |")
    md.append("\nCommands: " + "; ".join(cmds) + ".\n")
    if os.path.exists(args.out + ".partial"):
        os.remove(args.out + ".partial")


def holdout(args, md):
    md.append("## Kernel latency on GPUs held out of training\n")
    md.append("Each GPU in turn is removed from the training data; the models are retrained without it and predict its "
              "measured kernels (`perfloom eval --holdout-gpu ID`, the cross-generation tier unless the GPU has a "
              "calibration sweep, then the target-measured tier). Errors are absolute percentage errors against the "
              "measured latency; *pred/meas* is the median of predicted over measured time, the direction of the error "
              "(above 1: predicted too slow). *roofline*: the analytical time over a per-family efficiency fitted on "
              "the training GPUs; *habitat*: the same kernel measured on a training GPU, scaled by the two GPUs' roofline times "
              "(only where such a kernel exists; *covered* says how often).\n")
    holdout_table(args, md, args.gpus, "--holdout-gpu", "GPU")


def holdout_arch(args, md):
    md.append("## Kernel latency on architectures held out of training\n")
    md.append("The harder question: every GPU of one architecture (or compute capability) removed from the training "
              "data at once, so nothing of its generation is learned (`perfloom eval --holdout-arch ARCH`). Columns as "
              "above; the held-out GPUs are named beside the architecture.\n")
    holdout_table(args, md, DEFAULT_ARCHS, "--holdout-arch", "architecture")


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


SERVING_CSV = "tests/data/serving_published.csv"
SERVING_METRICS = [("ttft_ms", "TTFT ms"), ("tpot_ms", "TPOT ms"), ("output_tok_s", "output tok/s"), ("e2e_ms", "E2E ms")]


def read_serving_rows(path):
    """The published rows: a CSV with '#' comment lines; a blank metric is one the source does not report."""
    with open(os.path.join(ROOT, path), newline="") as f:
        lines = [l for l in f if l.strip() and not l.lstrip().startswith("#")]
    rows = list(csv.DictReader(lines))
    need = {"id", "source_url", "source_title", "source_version", "engine", "model", "gpu", "tp", "options", "workload",
            "note"} | {m for m, _ in SERVING_METRICS}
    for i, r in enumerate(rows, start=1):
        missing = sorted(k for k in need if r.get(k) is None)
        if missing:
            raise SystemExit(f"{path}: data row {i} ({r.get('id') or 'no id'}): missing column(s) {missing}")
        for m, _ in SERVING_METRICS:
            try:
                r[m] = float(r[m]) if r[m].strip() else None
            except ValueError:
                raise SystemExit(f"{path}: row {r['id']}: {m} is '{r[m][:80]}', not a number")
    return rows


def simulated(j):
    """perfloom simulate's figures for the published metrics: a batch: workload's E2E is the whole batch's latency."""
    out = {"ttft_ms": j["ttft_ms"]["mean"], "tpot_ms": j["tpot_ms"]["mean"],
           "output_tok_s": j["throughput"]["output_tokens_per_s"], "e2e_ms": j["e2e_ms"]["mean"]}
    if "total_ms" in j:
        out["e2e_ms"] = j["total_ms"]
    return out


def signed_err(pred, pub):
    return None if pred is None or pub is None else 100.0 * (pred - pub) / pub


def num(v):
    if v is None:
        return "-"
    return f"{v:.0f}" if abs(v) >= 1000 else (f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}")


def serr(v):
    return "-" if v is None else f"{v:+.1f}%"


def serving(args, md):
    rows = read_serving_rows(SERVING_CSV)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    results, cmds, total_s = [], [], 0.0
    for r in rows:
        cmd = [os.path.join(args.bin, "perfloom"), "simulate", "--model", r["model"], "--gpu", r["gpu"], "--tp",
               r["tp"]] + shlex.split(r["options"]) + ["--workload", r["workload"], "--json"]
        res, secs = run(cmd)
        if res.returncode != 0:
            raise SystemExit(f"{cmdline(cmd, args.bin)} failed:\n{res.stderr[-2000:]}")
        total_s += secs
        results.append(simulated(json.loads(res.stdout)))
        cmds.append(cmdline(cmd, args.bin))
        print(f"serving {r['id']}: {secs:.1f} s", file=sys.stderr)

    md.append("## Serving against published results\n")
    md.append(f"Generated on {datetime.date.today().isoformat()} at commit `{commit}` (`python3 tools/accuracy_report.py "
              "--sections serving` replaces this section alone). Each row is a serving benchmark published by a public "
              f"project, copied with its source into `{SERVING_CSV}`, and the same workload simulated with "
              "`perfloom simulate`: a closed loop (`closed:`) at the published concurrency where clients send requests "
              "(a request rate of `inf` is a closed loop of as many clients as requests, all starting at t = 0), a "
              "`batch:` workload for an offline batch. Warm-up and cool-down are kept (`warmup=0,cooldown=0`) because "
              "`vllm bench serve` counts every request and divides the tokens by the whole benchmark's duration, as "
              "perfloom's window does without them. Where the source drew its lengths from a dataset, the simulation "
              "gives every request the published mean lengths (the note in the CSV says so). The scheduler limits are "
              "the published engine's defaults (the CSV's `options`, in the commands below). Every published engine here ran 16-bit weights except "
              "gpt-oss-20b (its own MXFP4 experts, which perfloom also serves, weight-only on the H100). "
              "Error = (predicted - published) / published.\n")
    md.append("| id | model | GPU | TP | workload | TTFT ms published | predicted | error | TPOT ms published | predicted "
              "| error | output tok/s published | predicted | error | E2E ms published | predicted | error |")
    md.append("|---|---|---|---:|---|" + "---:|" * 12)
    for r, p in zip(rows, results):
        cells = []
        for m, _ in SERVING_METRICS:
            pub = r[m]
            cells += [num(pub), num(p[m]) if pub is not None else "-", serr(signed_err(p[m], pub))]
        md.append(f"| {r['id']} | {r['model']} | {r['gpu']} | {r['tp']} | `{r['workload']}` | " + " | ".join(cells) + " |")

    md.append("\n### Error per metric\n")
    md.append("MAPE: the mean absolute error over the rows that publish the metric; signed: the mean of the signed "
              "errors (negative: perfloom predicts less time or fewer tokens/s than was measured).\n")
    md.append("| rows | metric | rows with it | MAPE | median APE | mean signed error |")
    md.append("|---|---|---:|---:|---:|---:|")
    groups = [("all", list(range(len(rows))))]
    for title in dict.fromkeys(r["source_title"].split(" (")[0] for r in rows):
        groups.append((title, [i for i, r in enumerate(rows) if r["source_title"].split(" (")[0] == title]))
    for name, idx in groups:
        for m, label in SERVING_METRICS:
            errs = [signed_err(results[i][m], rows[i][m]) for i in idx if rows[i][m] is not None]
            if not errs:
                continue
            ape = [abs(e) for e in errs]
            md.append(f"| {name} | {label} | {len(errs)} | {sum(ape) / len(ape):.1f}% | {statistics.median(ape):.1f}% | "
                      f"{sum(errs) / len(errs):+.1f}% |")

    md.append("\n### Sources\n")
    by_url = {}
    for r in rows:
        by_url.setdefault(r["source_url"], []).append(r)
    for url, rs in by_url.items():
        r0 = rs[0]
        md.append(f"- {r0['source_title'].split(' (')[0]}, {r0['source_version']}: <{url}>. Engine: {r0['engine']}. "
                  f"Rows: " + "; ".join(f"{r['id']} ({r['source_title'].split('; ')[-1].rstrip(')')})" for r in rs) +
                  f". Setup: {r0['note']}.")

    md.append("\n### What the comparison leaves out\n")
    c1 = [i for i, r in enumerate(rows) if r["workload"].startswith("closed:concurrency=1,") and r["ttft_ms"]]
    if c1:
        gap = ", ".join(f"{rows[i]['ttft_ms'] - results[i]['ttft_ms']:.0f} ms ({rows[i]['id']})" for i in c1)
        md.append("- The client and the API server. `vllm bench serve --backend openai-chat` times TTFT from the HTTP "
                  "request to the first streamed token: the chat template, tokenisation, the server's queues and the "
                  "detokeniser are in it, and perfloom simulates the engine only (its steps and their per-step host "
                  "time). At concurrency 1, where no other request queues before the prompt, the published TTFT "
                  f"exceeds the predicted one by {gap}; each request's gap also lengthens the benchmark, which is why "
                  "the predicted throughput is higher by more than the TPOT error.")
    batch = [i for i, r in enumerate(rows) if r["workload"].startswith("batch:") and r["e2e_ms"]]
    if batch:
        def steps(w):
            return int(re.search(r"output=(\d+)", w).group(1))
        gap = ", ".join(f"{(rows[i]['e2e_ms'] - results[i]['e2e_ms']) / steps(rows[i]['workload']):.2f} ms "
                        f"({rows[i]['id']})" for i in batch)
        md.append("- Per-step engine time. The offline batches are one prefill and then decode steps of the whole batch, "
                  "so (published - predicted) / output tokens is the time per step the prediction lacks (host work, "
                  f"or kernels slower than predicted: these rows cannot tell which): {gap}. perfloom adds 250 us + "
                  "3 us per sequence of host time to every step (model/sim/step_cost.h).")
    moe = [i for i, r in enumerate(rows) if r["model"].startswith("gpt-oss") and r["tpot_ms"]]
    if moe:
        ratio = ", ".join(f"{rows[i]['tpot_ms'] / results[i]['tpot_ms']:.2f}x ({rows[i]['id']})" for i in moe)
        md.append("- The MXFP4 experts. In the gpt-oss bursts nearly every step carries the full 8,192-token budget of "
                  "prefill while prompts wait, so the TPOT ratio, published over predicted, is about the ratio of those "
                  f"steps' times: {ratio}. The moe family's "
                  "estimate is fitted on the bf16 and fp8 fused-MoE Triton kernel on an H200 (`data/moe-h200`); the "
                  "weight-only MXFP4 expert kernel vLLM runs on the H100 is timed by no measurement in the tree. The "
                  "H100's form factor is not on that page (SXM is simulated; a PCIe H100 is slower), nor is the "
                  "tensor-parallel degree (1 is simulated).")
    md.append("- The lengths. A ShareGPT run mixes short and long prompts, so prefills of different sizes land in the "
              "decode steps of other requests; the simulated clients, given equal mean lengths, stay in step, which "
              "may keep mixed steps rarer than in the published run.")
    md.append(f"\nCommands ({len(cmds)} simulations, {total_s:.0f} s): " + "; ".join(f"`{c}`" for c in cmds) + ".\n")



SECTION_FUNCS = {
    "holdout": holdout,
    "holdout_arch": holdout_arch,
    "roofline": tool_section("The ceiling is a lower bound", ["{bin}/perfloom-roofline-check", "data/public"], "--report"),
    "whatif": tool_section("What-if of profiled kernels between the H100 and the H200",
                           ["{bin}/perfloom-whatif-eval", "--data", "data"], "--out"),
    "traces": tool_section("Real traces: what the what-if understands", ["python3", "tools/trace_coverage.py", "--bin",
                                                                           "{bin}"], stdout=True),
    "comm": tool_section("Collectives", ["{bin}/perfloom-comm-check", "data/nccl-h200/nccl.csv"], stdout=True),
    "moe": tool_section(
        "MoE layer",
        ["python3", "tools/moe/layer_check.py", "compare", "tests/data/moe_layer_h200.csv", "--bin", "{bin}"],
        stdout=True,
        intro="One MoE layer of Qwen3-30B-A3B, DeepSeek-V2-Lite and Mixtral-8x7B measured on an H200 as an engine runs it "
              "(`tools/moe/layer_check.py measure`: router GEMM, softmax/top-k, align, the fused gate-up and down GEMMs at "
              "vLLM's default configuration, SiLU-and-mul, top-k sum, shared experts; CUDA-graph replays after an L2 "
              "flush, bf16) against `perfloom step`'s kernels of that layer (router, topk_softmax, moe_align, "
              "moe_experts, moe_silu_mul, moe_sum, shared_*). The expert GEMMs are also set against the fastest "
              "configuration of the fused-MoE sweep (`data/moe-h200`) at the same shape: the simulator assumes tuned "
              "configurations, as vLLM ships for common GPUs and shapes, and the default configuration measured here is "
              "up to twice as slow. The routing and align parts are PyTorch ops here (several kernels each), slower "
              "than the engines' fused kernels; they are shown, not compared."),
    "step": tool_section("Whole forward steps", ["python3", "tools/step_check/compare.py"], "--out"),
    "sustained": tool_section(
        "Sustained clocks on GPUs nobody here measured",
        ["python3", "tools/power/sustained_check.py", "--bin", "{bin}"], stdout=True,
        intro="Each GPU's sustained-power curve (`perfloom step|simulate --clocks sustained`): measured on the H100 "
              "and H200 (tools/power/power_probe.py), else the H100's scaled by the GPU's dense 16-bit tensor peak "
              "per watt of TDP (docs/prediction.md, Sustained clocks). No GPU other than those two has a sustained "
              "measurement here or in public, so the check is indirect: the public GEMM tables time short loops, "
              "which run at burst speed where a GPU has power to spare (the H100's public figure against its "
              "measured sustained one below) and fall short where even a short loop meets the power limit. How much slower a "
              "GPU held at its limit runs is the model's extrapolation, not a measurement: it assumes the H100's energy "
              "per tensor operation, which newer processes and wider tensor cores (Blackwell) likely lower."),
    "moe_model": tool_section(
        "MoE kernels: the moe family",
        ["python3", "tools/moe/model_check.py", "data/moe-h200", "--bin", "{bin}"], stdout=True,
        intro="The `moe` family's prediction (`perfloom predict --kernels`, op `moe`, H200) against every fused-MoE layer "
              "the sweep measured (`data/moe-h200`: gate-up plus down GEMMs at the best and at vLLM's default "
              "configuration), then with the model's efficiencies refitted leaving one model out."),
    "moe_tune": tool_section(
        "MoE kernels: `perfloom tune --moe`",
        ["python3", "tools/moe/tune_check.py", "data/moe-h200", "--bin", "{bin}"], stdout=True,
        intro="`perfloom tune --moe`'s first choice that the sweep timed, held out one model at a time, against vLLM's "
              "default configuration and the sweep's best, per shape, dtype and token count."),
    "tuner": tuner,
    "serving": serving,
}


def split_sections(text):
    """The report as blocks, each starting at a level-2 heading (the first block is the header): sections' own headings
    are demoted below level 2, so these are exactly the sections. Joining the blocks gives the text back."""
    blocks, cur = [], []
    for line in text.splitlines(keepends=True):
        if line.startswith("## ") and cur:
            blocks.append("".join(cur))
            cur = []
        cur.append(line)
    if cur:
        blocks.append("".join(cur))
    return blocks


def section_title(block):
    first = block.splitlines()[0] if block else ""
    return first[3:].strip() if first.startswith("## ") else None


def update_sections(args, names):
    """Runs only the sections named and replaces each one's block of the existing report in place, byte for byte as a
    whole run writes it; a section the report lacks goes after the last section before it in the report's order."""
    if not os.path.exists(args.out):
        raise SystemExit(f"--sections: {os.path.relpath(args.out, ROOT)} does not exist; run the whole report first")
    with open(args.out) as f:
        text = f.read()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    for name in [s for s in SECTIONS if s in names]:
        md = []
        SECTION_FUNCS[name](args, md)
        # The header's date and commit are the whole report's: a section run alone says its own.
        md.insert(1, f"*This section: `python3 tools/accuracy_report.py --sections {name}` on "
                     f"{datetime.date.today().isoformat()} at commit `{commit}`.*\n")
        title = section_title("\n".join(md))
        if title != SECTION_TITLES[name]:
            raise SystemExit(f"section {name}: its heading is '{title}', SECTION_TITLES says '{SECTION_TITLES[name]}'")
        blocks = split_sections(text)
        titles = [section_title(b) for b in blocks]
        if title in titles:
            i = titles.index(title)
        else:
            earlier = {SECTION_TITLES[s] for s in SECTIONS[:SECTIONS.index(name)]}
            i = max([k + 1 for k, t in enumerate(titles) if t in earlier] + [1])
            if i == len(blocks):  # the old last section now has one after it: the blank line a whole run puts there
                blocks[-1] += "\n"
            blocks.insert(i, "")
        # A whole run joins the sections' lines with a blank line after each and ends the file with one newline.
        blocks[i] = "\n".join(md) + "\n\n" if i + 1 < len(blocks) else "\n".join(md).rstrip() + "\n"
        text = "".join(blocks)
        with open(args.out, "w") as f:
            f.write(text)
        print(f"{name}: replaced in {os.path.relpath(args.out, ROOT)}", file=sys.stderr)


# Each section's level-2 heading, by which --sections finds it in the report.
SECTION_TITLES = {
    "holdout": "Kernel latency on GPUs held out of training",
    "holdout_arch": "Kernel latency on architectures held out of training",
    "roofline": "The ceiling is a lower bound",
    "whatif": "What-if of profiled kernels between the H100 and the H200",
    "traces": "Real traces: what the what-if understands",
    "comm": "Collectives",
    "step": "Whole forward steps",
    "sustained": "Sustained clocks on GPUs nobody here measured",
    "moe": "MoE layer",
    "moe_model": "MoE kernels: the moe family",
    "moe_tune": "MoE kernels: `perfloom tune --moe`",
    "tuner": "GEMM tile configurations (`perfloom tune`)",
    "serving": "Serving against published results",
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build/bin"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs/accuracy.md"))
    ap.add_argument("--gpus", default=",".join(DEFAULT_GPUS), help="held-out GPUs of the holdout section")
    ap.add_argument("--skip", default="", help="sections to leave out: " + ",".join(SECTIONS))
    ap.add_argument("--sections", default="",
                    help="run only these sections and replace them in the existing report: " + ",".join(SECTIONS))
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.out = os.path.abspath(args.out)
    args.gpus = [g for g in args.gpus.split(",") if g]
    skip = {s for s in args.skip.split(",") if s}
    only = {s for s in args.sections.split(",") if s}
    for flag, given in (("--skip", skip), ("--sections", only)):
        if given - set(SECTIONS):
            raise SystemExit(f"{flag}: unknown section(s) {sorted(given - set(SECTIONS))}; sections: {','.join(SECTIONS)}")
    if only and skip:
        raise SystemExit("--sections and --skip: give one of them")
    if only:
        update_sections(args, only)
        return
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
