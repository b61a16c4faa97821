# SPDX-License-Identifier: GPL-3.0-or-later
"""Fused-MoE configuration sweep on one GPU (tools/moe/README.md is the manual).

python3 tools/moe/sweep.py --out DIR [--shard A|B|all] [--deadline SECONDS] [--pool N] [--seed S]
python3 tools/moe/sweep.py --dry-run   (the plan only; needs neither torch nor a GPU)

Writes DIR/moe_<shard>.csv (one row per timed kernel, flushed as it goes, so a run stopped at its
deadline keeps what it timed) and DIR/check_<shard>.txt (the correctness check against PyTorch).
"""
import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import time

# Shapes of the MoE models in resources/llm/ (E experts, topk, hidden H, expert intermediate I),
# with the intermediate split by tensor parallelism (I/2, I/4, I/8) for the large ones.
MODELS = [
    # name, E, topk, H, I, splits, shard, block-fp8 (the checkpoints ship 128x128 block scales)
    ("mixtral-8x7b", 8, 2, 4096, 14336, (1, 2, 4, 8), "A", False),
    ("gpt-oss-120b", 128, 4, 2880, 2880, (1, 2, 4, 8), "A", False),
    ("gpt-oss-20b", 32, 4, 2880, 2880, (1,), "A", False),
    ("deepseek-v2-lite", 64, 6, 2048, 1408, (1,), "A", False),
    ("qwen3-235b-a22b", 128, 8, 4096, 1536, (1, 2, 4, 8), "B", True),
    ("qwen3-30b-a3b", 128, 8, 2048, 768, (1,), "B", False),
    ("deepseek-v3", 256, 8, 7168, 2048, (1, 2, 4, 8), "B", True),
]
TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
SPACE = dict(BLOCK_SIZE_M=[16, 32, 64, 128], BLOCK_SIZE_N=[32, 64, 128, 256], BLOCK_SIZE_K=[64, 128, 256],
             GROUP_SIZE_M=[1, 16, 32, 64], num_warps=[4, 8], num_stages=[2, 3, 4, 5])
KEYS = list(SPACE)
SMEM_LIMIT = 227 * 1024  # Hopper's shared memory per block
# The engine's default heuristic (vLLM get_default_config with no tuned file): Triton's own
# defaults fill the launch keys it leaves out (num_warps 4, num_stages 3).
DEFAULT_SMALL = dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, BLOCK_SIZE_K=64, GROUP_SIZE_M=1, num_warps=4, num_stages=3)
DEFAULT_LARGE = dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, num_warps=4, num_stages=3)
DEFAULT_BLOCK = dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, GROUP_SIZE_M=32, num_warps=4, num_stages=3)
COLUMNS = ["model", "E", "topk", "H", "I", "N", "K", "tokens", "dtype", "kernel", "BLOCK_SIZE_M", "BLOCK_SIZE_N",
           "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages", "engine_default", "time_us", "min_us", "reps",
           "active_experts", "padded_rows", "method", "status"]


def engine_default(tokens, E, mode):
    if mode == "fp8_block":
        return DEFAULT_BLOCK
    return DEFAULT_SMALL if tokens <= E else DEFAULT_LARGE


def cfg_key(c):
    return tuple(c[k] for k in KEYS)


def smem_bytes(c, elem):
    return c["num_stages"] * (c["BLOCK_SIZE_M"] + c["BLOCK_SIZE_N"]) * c["BLOCK_SIZE_K"] * elem


def config_pool(n, seed):
    """n configurations drawn from the space (the same for every shape, so each compiles once),
    that fit shared memory in bf16, plus the engine's defaults."""
    rng = random.Random(seed)
    allc = [dict(zip(KEYS, v)) for v in itertools.product(*SPACE.values())]
    fit = [c for c in allc if smem_bytes(c, 2) <= SMEM_LIMIT]
    pool = rng.sample(fit, n)
    for d in (DEFAULT_SMALL, DEFAULT_LARGE, DEFAULT_BLOCK):
        if cfg_key(d) not in {cfg_key(c) for c in pool}:
            pool.append(dict(d))
    return pool


def modes_for(block_fp8):
    return ["bf16", "fp8"] + (["fp8_block"] if block_fp8 else [])


def pool_for(pool, mode):
    # Block scales hold one scale per 128 columns of K: a K block must not straddle two groups.
    if mode == "fp8_block":
        return [c for c in pool if c["BLOCK_SIZE_K"] <= 128]
    return [c for c in pool if cfg_key(c) != cfg_key(DEFAULT_BLOCK)]


def shapes(shard, only=None):
    """The shard's shapes, every model's full intermediate first, so a run stopped at its deadline
    has covered each model once."""
    out = []
    for split in (1, 2, 4, 8):
        for name, E, topk, H, I, splits, sh, blk in MODELS:
            if shard not in ("all", sh) or split not in splits:
                continue
            label = name if split == 1 else f"{name}/tp{split}"
            if only and label not in only:
                continue
            out.append((label, E, topk, H, I // split, blk))
    return out


def compile_jobs(shard, pool, only=None):
    """(mode, kernel, cfg, N, K) for each distinct launch signature of the shard; a worker compiles
    each so the timing loop finds it in Triton's cache."""
    jobs = set()
    for _, E, topk, H, I, blk in shapes(shard, only):
        for mode in modes_for(blk):
            for c in pool_for(pool, mode):
                jobs.add((mode, "gate_up", cfg_key(c), 2 * I, H, topk))
                jobs.add((mode, "down", cfg_key(c), H, I, 1))
    return sorted(jobs)


def dry_run(args):
    pool = config_pool(args.pool, args.seed)
    for shard in ("A", "B"):
        sh = shapes(shard)
        jobs = compile_jobs(shard, pool)
        timed = sum(len(pool_for(pool, m)) * 2 * len(TOKENS) for _, _, _, _, _, b in sh for m in modes_for(b))
        flops = sum(2 * 16384 * topk * 3 * I * H for _, _, topk, H, I, _ in sh)
        print(f"shard {shard}: {len(sh)} shapes, {len(jobs)} compile jobs, {timed} timed GEMM points, "
              f"{flops / 1e12:.1f} TFLOP per configuration at 16384 tokens")
        for s in sh:
            print("  ", s)
    print(f"pool: {len(pool)} configurations; defaults {cfg_key(DEFAULT_SMALL)} {cfg_key(DEFAULT_LARGE)} "
          f"{cfg_key(DEFAULT_BLOCK)}")
    assert all(smem_bytes(c, 2) <= SMEM_LIMIT or c in (DEFAULT_SMALL, DEFAULT_LARGE, DEFAULT_BLOCK) for c in pool)
    assert engine_default(8, 8, "bf16") == DEFAULT_SMALL and engine_default(9, 8, "bf16") == DEFAULT_LARGE


# ---------------------------------------------------------------- GPU side


def compile_worker(job_file, index, count, result_file):
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fused_moe as fm
    jobs = [tuple(j) for j in json.load(open(job_file))]
    # One worker owns each (mode, kernel, cfg): its later launch signatures reuse the compile.
    mine = [j for j in jobs if hash(json.dumps([j[0], j[1], j[2]])) % count == index]
    mine.sort()
    dev = torch.device("cuda")
    bad = []
    for mode, kernel, key, N, K, a_row_div in mine:
        cfg = dict(zip(KEYS, key))
        try:
            T = 4
            n = T * a_row_div if kernel == "gate_up" else 4
            ids = torch.zeros((n, 1), dtype=torch.int32, device=dev)
            sorted_ids, expert_ids, num_post = fm.align(ids, 1, cfg["BLOCK_SIZE_M"])
            rows = T if kernel == "gate_up" else n
            a = torch.randn((rows, K), device=dev, dtype=torch.bfloat16)
            w = torch.randn((1, N, K), device=dev, dtype=torch.bfloat16)
            c = torch.empty((n, N), device=dev, dtype=torch.bfloat16)
            tw = torch.ones(n, device=dev) if kernel == "down" else None
            a_s = w_s = None
            if mode != "bf16":
                a, a_s = fm.quantize_act(a, mode)
                w, w_s = fm.quantize_weight(w, mode)
            fm.launch(cfg, a, w, c, sorted_ids, expert_ids, num_post, n, a_row_div, mode, a_s, w_s, tw)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a configuration that does not build is data
            bad.append([mode, kernel, list(key), N, K, type(e).__name__ + ": " + str(e)[:200]])
    json.dump(bad, open(result_file, "w"))


def start_precompile(shard, pool, workers, only):
    jobs = compile_jobs(shard, pool, only)
    jf = os.path.join("/tmp", f"moe_jobs_{shard}.json")
    json.dump([list(j[:2]) + [list(j[2])] + list(j[3:]) for j in jobs], open(jf, "w"))
    procs = []
    for i in range(workers):
        rf = f"/tmp/moe_bad_{shard}_{i}.json"
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--compile-worker", jf, str(i), str(workers),
                              rf], env=dict(os.environ, PYTHONHASHSEED="0"))
        procs.append((p, rf))
    return len(jobs), procs


def wait_precompile(procs):
    bad = []
    for p, rf in procs:
        p.wait()
        if os.path.exists(rf):
            bad += json.load(open(rf))
    return bad


def gpu_env():
    import torch
    import triton
    q = "name,clocks.sm,clocks.mem,clocks.max.sm,power.draw,temperature.gpu,driver_version"
    try:
        smi = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        smi = "nvidia-smi failed: " + str(e)
    p = torch.cuda.get_device_properties(0)
    return dict(gpu=p.name, sm_count=p.multi_processor_count, l2_bytes=getattr(p, "L2_cache_size", 0),
                torch=torch.__version__, triton=triton.__version__, cuda=torch.version.cuda, smi=smi)


class Timer:
    """Median device time of one launch: each repetition follows an L2 flush (a 128 MiB memset),
    and CUDA events bracket the launch alone."""

    def __init__(self):
        import torch
        self.torch = torch
        self.flush = torch.empty(128 << 20, dtype=torch.int8, device="cuda")
        self.ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(40)]

    def time(self, fn, target_ms=25.0, max_reps=25, cap_us=None):
        torch = self.torch
        fn()  # warm: compile or cache load, first-touch
        self.flush.zero_()
        s, e = self.ev[0]
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        first = s.elapsed_time(e) * 1e3
        if cap_us is not None and first > cap_us:
            return first, first, 1  # far slower than the best of this point: one timing is enough
        reps = int(max(3, min(max_reps, target_ms * 1e3 / (first + 60.0))))
        for i in range(reps):
            self.flush.zero_()
            s, e = self.ev[i]
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        ts = sorted(self.ev[i][0].elapsed_time(self.ev[i][1]) * 1e3 for i in range(reps))
        return ts[len(ts) // 2], ts[0], reps

    def time_graph(self, fn, reps=20):
        """For the multi-kernel steps (route, align, combine): a CUDA graph of fn, its replays timed."""
        torch = self.torch
        st = torch.cuda.Stream()
        st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            fn()
        torch.cuda.current_stream().wait_stream(st)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        return self.time(g.replay, max_reps=reps)


def correctness(fm, out_path):
    """The kernel against PyTorch (fp32 on the same, dequantized operands), fresh random data,
    outputs poisoned with NaN first so an unwritten row fails."""
    import torch
    dev = torch.device("cuda")
    lines = []
    ok = True
    cases = [(8, 2, 256, 384, 37), (64, 6, 512, 192, 5), (32, 4, 384, 360, 300), (128, 8, 256, 256, 129)]
    cfgs = [DEFAULT_SMALL, DEFAULT_LARGE, DEFAULT_BLOCK,
            dict(BLOCK_SIZE_M=128, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, GROUP_SIZE_M=16, num_warps=8, num_stages=3)]
    for (E, topk, H, I, T), mode, cfg in itertools.product(cases, ["bf16", "fp8", "fp8_block"], cfgs):
        if mode == "fp8_block" and cfg["BLOCK_SIZE_K"] > 128:
            continue
        torch.manual_seed(len(lines) + 1)
        x = torch.randn((T, H), device=dev, dtype=torch.bfloat16)
        w1 = (torch.randn((E, 2 * I, H), device=dev) / H ** 0.5).to(torch.bfloat16)
        w2 = (torch.randn((E, H, I), device=dev) / I ** 0.5).to(torch.bfloat16)
        tw, ids = fm.route(torch.randn((T, E), device=dev), topk)
        n = T * topk
        srt, eids, npost = fm.align(ids, E, cfg["BLOCK_SIZE_M"])
        inter = torch.randn((n, I), device=dev, dtype=torch.bfloat16)
        for kernel, a, w, div, wts in (("gate_up", x, w1, topk, None), ("down", inter, w2, 1, tw.reshape(-1))):
            a_s = w_s = None
            if mode != "bf16":
                a, a_s = fm.quantize_act(a, mode)
                w, w_s = fm.quantize_weight(w, mode)
            c = torch.full((n, w.shape[1]), float("nan"), device=dev, dtype=torch.bfloat16)
            fm.launch(cfg, a, w, c, srt, eids, npost, n, div, mode, a_s, w_s, wts)
            ref = fm.reference(a, w, ids, div, wts, a_s, w_s, mode)
            got = c.float()
            err = (got - ref).abs()
            rel = (err.norm() / ref.norm()).item()
            mx = err.max().item()
            nan = torch.isnan(got).any().item()
            good = (not nan) and rel < 2e-2
            ok &= good
            lines.append(f"E={E} topk={topk} H={H} I={I} T={T} {mode} {kernel} cfg={cfg_key(cfg)}: "
                         f"max_abs={mx:.3e} rel_fro={rel:.3e} max_ref={ref.abs().max().item():.3e} "
                         f"{'ok' if good else 'FAIL'}")
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    worst = {}
    for l in lines:
        mode = l.split()[5]
        r = float(l.split("rel_fro=")[1].split()[0])
        worst[mode] = max(worst.get(mode, 0), r)
    print("correctness:", "ok" if ok else "FAILED", "worst rel_fro per dtype:", worst, flush=True)
    return ok


def sweep(args):
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import fused_moe as fm
    t_start = time.time()
    os.makedirs(args.out, exist_ok=True)
    env = gpu_env()
    print("env:", env, flush=True)
    pool = config_pool(args.pool, args.seed)
    t0 = time.time()
    # Worker processes fill Triton's cache while this one checks the kernel against PyTorch.
    njobs, procs = start_precompile(args.shard, pool, args.workers, args.only)
    if not correctness(fm, os.path.join(args.out, f"check_{args.shard}.txt")) and not args.force:
        for p, _ in procs:
            p.kill()
        sys.exit("correctness check failed; see check file")
    bad = wait_precompile(procs)
    bad_keys = {(b[0], b[1], tuple(b[2]), b[3], b[4]) for b in bad}
    print(f"precompile: {njobs} jobs, {len(bad)} failed, {time.time() - t0:.0f} s", flush=True)
    with open(os.path.join(args.out, f"compile_failures_{args.shard}.json"), "w") as f:
        json.dump(bad, f)

    path = os.path.join(args.out, f"moe_{args.shard}.csv")
    out = open(path, "w")
    out.write("# format=perfloom-moe-sweep/1\n")
    for k, v in env.items():
        out.write(f"# {k}={v}\n")
    out.write(f"# date={time.strftime('%Y-%m-%d')}\n# pool_seed={args.seed} pool_size={len(pool)}\n")
    out.write("# timing=median of CUDA-event times of one launch, each after a 128 MiB L2 flush; "
              "route/align/combine: CUDA-graph replays; activations random, routing softmax-top-k of random logits\n")
    out.write(",".join(COLUMNS) + "\n")
    timer = Timer()
    dev = torch.device("cuda")
    ops = {"grouped_mm": hasattr(torch, "_grouped_mm"), "scaled_grouped_mm": hasattr(torch, "_scaled_grouped_mm")}
    gm_err = {}

    def row(**kv):
        out.write(",".join(str(kv.get(c, "")) for c in COLUMNS) + "\n")

    stopped = False
    for name, E, topk, H, I, blk in shapes(args.shard, args.only):
        if stopped:
            break
        torch.manual_seed(0)
        w1 = (torch.randn((E, 2 * I, H), device=dev, dtype=torch.bfloat16) * (H ** -0.5))
        w2 = (torch.randn((E, H, I), device=dev, dtype=torch.bfloat16) * (I ** -0.5))
        weights = {"bf16": (w1, None, w2, None)}
        for mode in modes_for(blk)[1:]:
            q1, s1 = fm.quantize_weight(w1, mode)
            q2, s2 = fm.quantize_weight(w2, mode)
            weights[mode] = (q1, s1, q2, s2)
        base = dict(model=name, E=E, topk=topk, H=H, I=I)
        for T in TOKENS:
            if time.time() - t_start > args.deadline:
                stopped = True
                print(f"deadline reached at {name} T={T}", flush=True)
                break
            n = T * topk
            x = torch.randn((T, H), device=dev, dtype=torch.bfloat16)
            logits = torch.randn((T, E), device=dev, dtype=torch.float32)
            tw, ids = fm.route(logits, topk)
            tw = tw.reshape(-1).contiguous()
            active = int(torch.unique(ids).numel())
            inter = torch.randn((n, I), device=dev, dtype=torch.bfloat16)
            c1 = torch.empty((n, 2 * I), device=dev, dtype=torch.bfloat16)
            c2 = torch.empty((n, H), device=dev, dtype=torch.bfloat16)
            common = dict(base, tokens=T, active_experts=active)
            med, mn, reps = timer.time_graph(lambda: fm.route(logits, topk))
            row(**common, dtype="fp32", kernel="route", time_us=f"{med:.2f}", min_us=f"{mn:.2f}", reps=reps,
                method="graph", status="ok")
            med, mn, reps = timer.time_graph(lambda: fm.combine(c2, T, topk))
            row(**common, N=H, dtype="bf16", kernel="combine", time_us=f"{med:.2f}", min_us=f"{mn:.2f}", reps=reps,
                method="graph", status="ok")
            aligned, padded = {}, {}
            for bm in SPACE["BLOCK_SIZE_M"]:
                aligned[bm] = fm.align(ids, E, bm)
                padded[bm] = int(aligned[bm][2].item())
                med, mn, reps = timer.time_graph(lambda: fm.align(ids, E, bm))
                row(**common, dtype="int32", kernel="align", BLOCK_SIZE_M=bm, time_us=f"{med:.2f}",
                    min_us=f"{mn:.2f}", reps=reps, padded_rows=padded[bm], method="graph",
                    status="ok")
            # Reference grouped GEMM: torch._grouped_mm on the rows already permuted by expert.
            order = torch.argsort(ids.reshape(-1), stable=True)
            counts = torch.bincount(ids.reshape(-1).long(), minlength=E)
            offs = torch.cumsum(counts, 0).to(torch.int32)
            xp = x[order // topk].contiguous()
            ip = inter[order].contiguous()
            for kernel, a, w in (("grouped_mm_gate_up", xp, w1), ("grouped_mm_down", ip, w2)):
                if not ops["grouped_mm"]:
                    break
                try:
                    wt = w.transpose(-2, -1)
                    med, mn, reps = timer.time(lambda: torch._grouped_mm(a, wt, offs=offs, out_dtype=torch.bfloat16))
                    row(**common, N=w.shape[1], K=w.shape[2], dtype="bf16", kernel=kernel, time_us=f"{med:.2f}",
                        min_us=f"{mn:.2f}", reps=reps, method="events", status="ok")
                except Exception as e:  # noqa: BLE001
                    gm_err.setdefault(kernel, type(e).__name__ + ": " + str(e)[:300])
                    row(**common, N=w.shape[1], K=w.shape[2], dtype="bf16", kernel=kernel, status="error")
            for mode in modes_for(blk):
                q1, s1, q2, s2 = weights[mode]
                if mode == "bf16":
                    a1, as1, a2, as2 = x, None, inter, None
                else:
                    a1, as1 = fm.quantize_act(x, mode)
                    a2, as2 = fm.quantize_act(inter, mode)
                dflt = cfg_key(engine_default(T, E, mode))
                for kernel, a, a_s, w, w_s, c, div, wts in (("gate_up", a1, as1, q1, s1, c1, topk, None),
                                                            ("down", a2, as2, q2, s2, c2, 1, tw)):
                    N, K = w.shape[1], w.shape[2]
                    best = None
                    cfgs = pool_for(pool, mode)
                    # The default first: it sets the bar that lets far slower configurations stop early.
                    cfgs.sort(key=lambda c: cfg_key(c) != dflt)
                    for cfg in cfgs:
                        key = cfg_key(cfg)
                        kv = dict(common, N=N, K=K, dtype=mode, kernel=kernel, engine_default=int(key == dflt),
                                  padded_rows=padded[cfg["BLOCK_SIZE_M"]],
                                  **{k: cfg[k] for k in KEYS})
                        if (mode, kernel, key, N, K) in bad_keys:
                            row(**kv, status="compile_failed")
                            continue
                        srt, eids, npost = aligned[cfg["BLOCK_SIZE_M"]]
                        try:
                            cap = None if best is None or best < 500 else 4 * best
                            med, mn, reps = timer.time(
                                lambda: fm.launch(cfg, a, w, c, srt, eids, npost, n, div, mode, a_s, w_s, wts),
                                cap_us=cap)
                        except Exception as e:  # noqa: BLE001
                            row(**kv, status="error:" + type(e).__name__)
                            continue
                        best = med if best is None else min(best, med)
                        row(**kv, time_us=f"{med:.2f}", min_us=f"{mn:.2f}", reps=reps, method="events",
                            status="ok" if reps > 1 else "capped")
                    out.flush()
            if ops["scaled_grouped_mm"] and "fp8" in weights:
                # fp8 reference grouped GEMM: row-wise activation scales, column-wise weight scales.
                q1, _, q2, _ = weights["fp8"]
                for kernel, a, w in (("scaled_grouped_mm_gate_up", xp, q1), ("scaled_grouped_mm_down", ip, q2)):
                    try:
                        aq, _ = fm.quantize_act(a, "fp8")
                        sa = torch.ones(a.shape[0], device=dev, dtype=torch.float32)
                        sb = torch.ones((w.shape[0], w.shape[1]), device=dev, dtype=torch.float32)
                        wt = w.transpose(-2, -1)
                        med, mn, reps = timer.time(lambda: torch._scaled_grouped_mm(
                            aq, wt, sa, sb, offs=offs, out_dtype=torch.bfloat16))
                        row(**common, N=w.shape[1], K=w.shape[2], dtype="fp8", kernel=kernel, time_us=f"{med:.2f}",
                            min_us=f"{mn:.2f}", reps=reps, method="events", status="ok")
                    except Exception as e:  # noqa: BLE001
                        gm_err.setdefault(kernel, type(e).__name__ + ": " + str(e)[:300])
                        row(**common, N=w.shape[1], K=w.shape[2], dtype="fp8", kernel=kernel, status="error")
            out.flush()
            print(f"{name} T={T} done at {time.time() - t_start:.0f} s", flush=True)
        del weights, w1, w2
        torch.cuda.empty_cache()
    smi_after = gpu_env()["smi"]
    out.write(f"# smi_after={smi_after}\n# grouped_mm_errors={json.dumps(gm_err)}\n")
    out.write(f"# complete={int(not stopped)} elapsed_s={time.time() - t_start:.0f}\n")
    out.close()
    print("grouped_mm errors:", gm_err)
    print(f"wrote {path} in {time.time() - t_start:.0f} s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="moe-out")
    ap.add_argument("--shard", default="all", choices=["A", "B", "all"])
    ap.add_argument("--deadline", type=float, default=520.0, help="seconds after which no new token count starts")
    ap.add_argument("--pool", type=int, default=40, help="random configurations besides the defaults")
    ap.add_argument("--seed", type=int, default=60)
    ap.add_argument("--workers", type=int, default=14, help="processes that compile the kernels first")
    ap.add_argument("--shapes", dest="only", type=lambda v: set(v.split(",")), default=None,
                    help="comma-separated shape labels (model or model/tpN) to keep")
    ap.add_argument("--force", action="store_true", help="sweep even if the correctness check fails")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--compile-worker", nargs=4, metavar=("JOBS", "INDEX", "COUNT", "RESULT"))
    args = ap.parse_args()
    if args.dry_run:
        dry_run(args)
    elif args.compile_worker:
        j, i, n, r = args.compile_worker
        compile_worker(j, int(i), int(n), r)
    else:
        sweep(args)


if __name__ == "__main__":
    main()
