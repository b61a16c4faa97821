#!/usr/bin/env python3
"""The simulator's MoE layer against the same layer measured on a GPU.

measure (on the GPU, PyTorch + Triton):
  python3 tools/moe/layer_check.py measure --out DIR [--models qwen3-30b-a3b,deepseek-v2-lite]
builds one MoE layer of each model from its config in resources/llm/ (random bf16 weights, random
router logits) as a serving engine runs it and as `perfloom step` lays it out: the router GEMM,
softmax/top-k (renormalised where the config says norm_topk_prob), align, the fused-MoE gate-up
GEMM (tools/moe/fused_moe.py, vLLM's default configuration for the token count), SiLU-and-mul, the
fused down GEMM with the routing weight, the top-k sum, and the shared experts' MLP where the model
has them. Each part and the whole layer are captured as CUDA graphs and timed by CUDA events over
replays, each replay after a 128 MiB memset that flushes the L2 (the median of 20). Writes
DIR/moe_layer_<gpu>.csv.

compare (here, no GPU):
  python3 tools/moe/layer_check.py compare tests/data/moe_layer_h200.csv [--bin build/bin]
runs `perfloom step --json` at each token count (decode batches up to 256 tokens, one prefill
sequence above) and sets the layer's kernels (router, topk_softmax, moe_experts, moe_silu_mul and
the shared_* ones) against the measured parts and the whole layer.
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LLM_DIR = os.path.join(HERE, "..", "..", "resources", "llm")
TOKENS = [1, 4, 16, 64, 256, 1024, 4096]
PARTS = ["router", "route", "align", "gate_up", "silu_mul", "down", "combine", "shared"]


def moe_config(name):
    with open(os.path.join(LLM_DIR, name + ".json")) as f:
        c = json.load(f)
    E = c.get("num_experts") or c.get("n_routed_experts") or c.get("num_local_experts")
    return {
        "E": int(E), "topk": int(c["num_experts_per_tok"]), "H": int(c["hidden_size"]),
        "I": int(c.get("moe_intermediate_size") or c["intermediate_size"]), "norm": bool(c.get("norm_topk_prob", True)),
        "shared_I": int(c.get("n_shared_experts") or 0) * int(c.get("moe_intermediate_size") or 0),
    }


def measure(args):
    import torch
    import triton
    sys.path.insert(0, HERE)
    import fused_moe as fm
    from sweep import engine_default

    torch.manual_seed(0)
    dev = "cuda"
    gpu = torch.cuda.get_device_name().lower().replace("nvidia ", "").split()[0]
    flush = torch.empty(128 << 20, dtype=torch.uint8, device=dev)
    rows = []
    for name in args.models.split(","):
        m = moe_config(name)
        E, k, H, I, SI = m["E"], m["topk"], m["H"], m["I"], m["shared_I"]
        w_router = torch.randn(E, H, device=dev, dtype=torch.bfloat16) * 0.02
        w13 = torch.randn(E, 2 * I, H, device=dev, dtype=torch.bfloat16) * 0.02
        w2 = torch.randn(E, H, I, device=dev, dtype=torch.bfloat16) * 0.02
        if SI:
            ws13 = torch.randn(2 * SI, H, device=dev, dtype=torch.bfloat16) * 0.02
            ws2 = torch.randn(H, SI, device=dev, dtype=torch.bfloat16) * 0.02
        for T in TOKENS:
            cfg = engine_default(T, E, "bf16")
            bm = cfg["BLOCK_SIZE_M"]
            x = torch.randn(T, H, device=dev, dtype=torch.bfloat16)
            n = T * k
            em = fm.max_padded(n, E, bm)
            st = {}

            def router():
                st["logits"] = x @ w_router.t()

            def route():
                p = torch.softmax(st["logits"].float(), dim=-1)
                w, ids = torch.topk(p, k, dim=-1)
                if m["norm"]:
                    w = w / w.sum(dim=-1, keepdim=True)
                st["w"], st["ids"] = w.reshape(-1).contiguous(), ids.to(torch.int32)

            def align():
                st["sorted"], st["experts"], st["post"] = fm.align(st["ids"], E, bm)

            gu = torch.empty(n, 2 * I, device=dev, dtype=torch.bfloat16)
            dn = torch.empty(n, H, device=dev, dtype=torch.bfloat16)

            def gate_up():
                fm.launch(cfg, x, w13, gu, st["sorted"], st["experts"], st["post"], n, k, "bf16")

            def silu_mul():
                st["act"] = torch.nn.functional.silu(gu[:, :I]) * gu[:, I:]

            def down():
                fm.launch(cfg, st["act"], w2, dn, st["sorted"], st["experts"], st["post"], n, 1, "bf16",
                          topk_w=st["w"])

            def combine():
                st["out"] = fm.combine(dn, T, k)

            def shared():
                if SI:
                    h = x @ ws13.t()
                    st["shared"] = (torch.nn.functional.silu(h[:, :SI]) * h[:, SI:]) @ ws2.t()

            fns = dict(router=router, route=route, align=align, gate_up=gate_up, silu_mul=silu_mul, down=down,
                       combine=combine, shared=shared)
            for f in fns.values():  # compile and warm up, in order (each part reads the previous one's output)
                f()
            torch.cuda.synchronize()

            def timed(body):
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    body()
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    body()
                times = []
                for _ in range(20):
                    flush.zero_()
                    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    a.record()
                    g.replay()
                    b.record()
                    b.synchronize()
                    times.append(a.elapsed_time(b) * 1000.0)
                times.sort()
                return times[len(times) // 2]

            row = {"model": name, "gpu": gpu, "E": E, "topk": k, "H": H, "I": I, "shared_I": SI, "tokens": T,
                   "config": "%d/%d/%d/%d/w%d/s%d" % (cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"], cfg["BLOCK_SIZE_K"],
                                                        cfg["GROUP_SIZE_M"], cfg["num_warps"], cfg["num_stages"])}
            for p in PARTS:
                row[p + "_us"] = round(timed(fns[p]), 3) if (p != "shared" or SI) else 0.0
            row["layer_us"] = round(timed(lambda: [fns[p]() for p in PARTS]), 3)
            # The layer against a PyTorch reference on a few rows (the fused kernel is checked in sweep.py).
            ref = torch.zeros(T, H, device=dev, dtype=torch.float32)
            ids = st["ids"].long()
            wts = st["w"].view(T, k)
            for t in range(min(T, 4)):
                for j in range(k):
                    e = ids[t, j]
                    h = x[t].float() @ w13[e].float().t()
                    a = torch.nn.functional.silu(h[:I]) * h[I:]
                    ref[t] += wts[t, j] * (a @ w2[e].float().t())
            got = st["out"][: min(T, 4)].float()
            err = ((got - ref[: min(T, 4)]).norm() / ref[: min(T, 4)].norm()).item()
            row["rel_err"] = "%.2e" % err
            if not err < 3e-2:
                raise SystemExit(f"{name} T={T}: relative error {err:.3g} against the reference")
            rows.append(row)
            print(name, T, row["layer_us"], "us", row["config"], "err", row["rel_err"], flush=True)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"moe_layer_{gpu}.csv")
    with open(path, "w", newline="") as f:
        f.write("# perfloom MoE layer check: tools/moe/layer_check.py measure; torch %s, triton %s, %s\n"
                % (torch.__version__, triton.__version__, torch.cuda.get_device_name()))
        wr = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        wr.writeheader()
        wr.writerows(rows)
    print("wrote", path)


def step_kernels(binary, model, gpu, T):
    if T <= 256:
        args = ["--phase", "decode", "--batch", str(T), "--context", "512"]
    else:
        args = ["--phase", "prefill", "--batch", "1", "--tokens", str(T)]
    out = subprocess.run([os.path.join(binary, "perfloom"), "step", "--model", model, "--gpu", gpu, "--graphs",
                          "--json"] + args, check=True, capture_output=True, text=True).stdout
    ks = {}
    for k in json.loads(out)["kernels"]:
        ks.setdefault(k["label"], k["us_each"])  # the MoE layers' kernels (every MoE layer is the same)
    return ks


def sweep_best(folder):
    """(model, tokens) -> the sweep's fastest gate-up plus fastest down, bf16, where the sweep has the shape."""
    sys.path.insert(0, HERE)
    from analyze import read_rows
    best = {}
    for r in read_rows(folder):
        if r["dtype"] != "bf16" or r["kernel"] not in ("gate_up", "down") or r["status"] not in ("ok", "capped"):
            continue
        key = (r["model"], int(r["tokens"]), r["kernel"])
        best[key] = min(best.get(key, float("inf")), float(r["time_us"]))
    out = {}
    for (model, T, kernel), t in best.items():
        other = best.get((model, T, "down" if kernel == "gate_up" else "gate_up"))
        if other is not None:
            out[(model, T)] = t + other
    return out


def compare(args):
    with open(args.csv) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    best = sweep_best(args.sweep) if args.sweep else {}
    pairs = {"router": ["router"], "route": ["topk_softmax"], "align": ["moe_align"], "gate_up+down": ["moe_experts"],
             "silu_mul": ["moe_silu_mul"], "combine": ["moe_sum"],
             "shared": ["shared_gate_up_proj", "shared_silu_mul", "shared_down_proj"]}
    print("| model | tokens | measured layer (us) | predicted layer (us) | error | experts at the default configuration "
          "/ the sweep's best / predicted (us) | align+combine measured / predicted (us) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    errs, best_errs = [], []
    for r in rows:
        T = int(r["tokens"])
        gpu = {"h200": "h200", "h100": "h100-sxm"}.get(r["gpu"], r["gpu"])
        ks = step_kernels(args.bin, r["model"], gpu, T)
        pred = sum(ks.get(label, 0.0) for labels in pairs.values() for label in labels)
        meas = float(r["layer_us"])
        experts_m = float(r["gate_up_us"]) + float(r["down_us"])
        err = pred / meas - 1
        errs.append(abs(err))
        b = best.get((r["model"], T))
        if b:
            best_errs.append(abs(ks.get("moe_experts", 0.0) / b - 1))
        print("| %s | %d | %.1f | %.1f | %+.1f%% | %.1f / %s / %.1f | %.1f / %.1f |" % (
            r["model"], T, meas, pred, 100 * err, experts_m, "%.1f" % b if b else "-", ks.get("moe_experts", 0.0),
            float(r["align_us"]) + float(r["combine_us"]), ks.get("moe_align", 0.0) + ks.get("moe_sum", 0.0)))
    errs.sort()
    best_errs.sort()
    print("\nlayers: %d, median |error| %.1f%%, worst %.1f%%" % (len(errs), 100 * errs[len(errs) // 2], 100 * errs[-1]))
    if best_errs:
        print("expert GEMMs against the sweep's best configuration: %d points, median |error| %.1f%%, worst %.1f%%"
              % (len(best_errs), 100 * best_errs[len(best_errs) // 2], 100 * best_errs[-1]))
        print("(in sample: the moe booster is trained on these sweep layers; held out one model at a time, see "
              "\"MoE kernels: the moe family\")")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", required=True)
    m.add_argument("--models", default="qwen3-30b-a3b,deepseek-v2-lite,mixtral-8x7b")
    c = sub.add_parser("compare")
    c.add_argument("csv")
    c.add_argument("--bin", default=os.path.join(HERE, "..", "..", "build", "bin"))
    c.add_argument("--sweep", default=os.path.join(HERE, "..", "..", "data", "moe-h200"),
                   help="the sweep's folder, for the best configuration's expert GEMMs ('' for none)")
    a = ap.parse_args()
    measure(a) if a.cmd == "measure" else compare(a)


if __name__ == "__main__":
    main()
