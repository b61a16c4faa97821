#!/usr/bin/env python3
"""vLLM-like decoder step in plain PyTorch, timed on the GPU.

Random bf16 weights with the real dimensions of a model; preallocated KV cache; prefill eager;
decode captured in a CUDA graph. Whole-step latency = median of CUDA-event timings over REPS
repetitions after warm-up; one torch.profiler run per configuration (eager) gives kernel time per
family (gemm / attention / norm / elementwise / other), attributed through record_function ranges.

KV cache: one tensor [P, 2, Bmax, Cmax, Hkv, D]; layer l uses slot l % P with P = as many layers'
caches as fit in memory (a layer's cache at B=128, C=8192 is 4.3 GB, far above L2, so sharing slots
between distant layers changes no traffic).

Usage: step_bench.py OUT_DIR [time_budget_s] [fused]

`fused` runs the elementwise work the way serving engines do, one kernel per fused op (Inductor-made
Triton kernels from torch.compile): residual add + RMSNorm, q/k norm + rotary, SiLU-and-mul. The
plain variant runs PyTorch's eager ops (several kernels each), which vLLM and SGLang do not.
"""
import csv
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

T0 = time.time()
OUT = sys.argv[1] if len(sys.argv) > 1 else "."
BUDGET = float(sys.argv[2]) if len(sys.argv) > 2 else 330.0
FUSED = len(sys.argv) > 3 and sys.argv[3] == "fused"
# Tensor parallelism (step_bench_tp.py sets it): the all-reduce after the attention output and the
# MLP down projection, as vLLM's row-parallel layers do it.
TP_ALLREDUCE = None


def tp_all_reduce(x):
    if TP_ALLREDUCE is None:
        return x
    with record_function("cat:communication"):
        return TP_ALLREDUCE(x)


def capture_graph(fn):
    """Warms `fn` up on a side stream and captures it in a CUDA graph (how decode runs)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g
REPS = 30
WARM = 5
HERE = os.path.dirname(os.path.abspath(__file__))
CFG_DIR = os.path.join(HERE, "configs")

DECODE_BATCHES = [1, 8, 32, 64, 128]
DECODE_CONTEXTS = [512, 2048, 8192]
PREFILLS = [(1, 128), (1, 512), (1, 1024), (1, 2048), (4, 512), (4, 1024), (8, 512), (1, 4096), (2, 4096),
            (1, 8192)]  # (batch, tokens per sequence); the eager data (step_<gpu>.csv) has 1x512, 1x2048, 4x1024, 1x8192 only
if os.environ.get("STEP_PREFILLS"):  # e.g. "1x512,4x1024": other prefill shapes
    PREFILLS = [tuple(int(v) for v in bt.split("x")) for bt in os.environ["STEP_PREFILLS"].split(",")]
# STEP_PHASES=prefill (or decode) measures one phase only; STEP_KERNELS=1 also writes every kernel's
# name, family range, count and total time per configuration (kernels_<gpu>[_fused].csv), which is
# how a step prediction is compared kernel by kernel.
PHASES = [p for p in os.environ.get("STEP_PHASES", "prefill,decode").split(",") if p]
KERNELS = os.environ.get("STEP_KERNELS", "") == "1"
MAX_B, MAX_C = 128, 8192

dev = torch.device("cuda")
dt = torch.bfloat16
LOG = open(os.path.join(OUT, "log.txt"), "a")


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


from torch.nn.attention import SDPBackend, sdpa_kernel

FAST = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
GQA_MODE = {"native": True}


def sdpa(q, k, v, causal):
    """Fused SDPA (never the math backend); GQA natively where the backend takes it."""
    with sdpa_kernel(FAST):
        if GQA_MODE["native"]:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        r = q.shape[1] // k.shape[1]
        return F.scaled_dot_product_attention(q, k.repeat_interleave(r, 1), v.repeat_interleave(r, 1), is_causal=causal)


def probe_sdpa():
    for T, L in ((1, 600), (64, 64)):
        q = torch.randn(2, 32, T, 128, device=dev, dtype=dt)
        kv = torch.randn(2, 600, 8, 128, device=dev, dtype=dt)[:, :L].transpose(1, 2)
        try:
            sdpa(q, kv, kv, T > 1)
        except Exception as ex:  # noqa
            log(f"SDPA with enable_gqa on a fused backend failed ({ex}); using repeat_interleave")
            GQA_MODE["native"] = False
            return
    log("SDPA: fused backend with enable_gqa=True")


def rms(x, w, eps):
    return F.rms_norm(x, (x.shape[-1],), w, eps)


def _add_rms(x, res, w, eps):
    r = x + res
    v = r.float()
    v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps)
    return (v * w.float()).to(x.dtype), r


def _rms_only(x, w, eps):
    v = x.float()
    v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps)
    return (v * w.float()).to(x.dtype)


def _rope_tok(x, cos, sin):
    # NeoX rotary on x [N, heads, D] with per-token cos/sin [N, 1, D] (gathered by position, as
    # vLLM's rotary embedding does), so batch and sequence length are one token dimension.
    h = x.shape[-1] // 2
    rot = torch.cat([-x[..., h:], x[..., :h]], -1)
    return x * cos + rot * sin


def _qk_norm_rope(qk, qn, kn, Hq, eps, cos, sin, do_norm):
    q, k = qk[:, :Hq], qk[:, Hq:]
    if do_norm:
        q, k = _rms_only(q, qn, eps), _rms_only(k, kn, eps)
    return _rope_tok(q, cos, sin), _rope_tok(k, cos, sin)


def _silu_mul(gu, I):
    return F.silu(gu[:, :I]) * gu[:, I:]


def _token_dynamic(fn):
    """torch.compile the way vLLM v1 compiles its model: only the token dimension (dim 0 of every
    tensor argument) is symbolic, hidden sizes stay static. (dynamic=True made every dimension
    symbolic and Inductor's kernels ran at 10-40% of DRAM bandwidth on an H100, measured.)"""
    compiled = torch.compile(fn, dynamic=False)

    def call(*args):
        for a in args:
            if isinstance(a, torch.Tensor) and a.dim() > 1:
                torch._dynamo.maybe_mark_dynamic(a, 0)
        return compiled(*args)
    return call


if FUSED:
    torch._dynamo.config.cache_size_limit = 64  # two models, a graph or two each
    add_rms = _token_dynamic(_add_rms)
    rms_c = _token_dynamic(_rms_only)
    qk_norm_rope = _token_dynamic(_qk_norm_rope)
    silu_mul = _token_dynamic(_silu_mul)


class Model:
    def __init__(self, name, cfg):
        self.name = name
        self.H = cfg["hidden_size"]
        self.L = cfg["num_hidden_layers"]
        self.Hq = cfg["num_attention_heads"]
        self.Hkv = cfg["num_key_value_heads"]
        self.D = cfg.get("head_dim") or self.H // self.Hq
        self.I = cfg["intermediate_size"]
        self.V = cfg["vocab_size"]
        self.eps = cfg.get("rms_norm_eps", 1e-5)
        self.qk_norm = cfg.get("model_type") == "qwen3"
        self.bias = bool(cfg.get("attention_bias", False)) or cfg.get("model_type") == "qwen2"
        theta = cfg.get("rope_theta", 10000.0)
        H, D, Hq, Hkv, I = self.H, self.D, self.Hq, self.Hkv, self.I

        def w(n, k):
            return torch.randn(n, k, device=dev, dtype=dt) / math.sqrt(k)

        self.embed = torch.randn(self.V, H, device=dev, dtype=dt)
        self.layers = []
        for _ in range(self.L):
            lw = {
                "ln1": torch.ones(H, device=dev, dtype=dt),
                "ln2": torch.ones(H, device=dev, dtype=dt),
                "qkv": w((Hq + 2 * Hkv) * D, H),
                "qkv_b": torch.zeros((Hq + 2 * Hkv) * D, device=dev, dtype=dt) if self.bias else None,
                "o": w(H, Hq * D),
                "gu": w(2 * I, H),
                "down": w(H, I),
                "qn": torch.ones(D, device=dev, dtype=dt),
                "kn": torch.ones(D, device=dev, dtype=dt),
            }
            self.layers.append(lw)
        self.norm = torch.ones(H, device=dev, dtype=dt)
        self.lm_head = w(self.V, H)
        inv = 1.0 / (theta ** (torch.arange(0, D, 2, device=dev, dtype=torch.float32) / D))
        pos = torch.arange(MAX_C + 16, device=dev, dtype=torch.float32)
        f = torch.outer(pos, inv)
        self.cos = torch.cat([f.cos(), f.cos()], -1).to(dt)  # [pos, D]
        self.sin = torch.cat([f.sin(), f.sin()], -1).to(dt)
        torch.cuda.synchronize()
        free, _ = torch.cuda.mem_get_info()
        per_layer = 2 * MAX_B * MAX_C * Hkv * D * 2
        budget = free - 14 * 2**30  # activations of an 8192-token prefill, logits, graph pools
        self.P = max(2, min(self.L, int(budget // per_layer)))
        self.kv = torch.zeros(self.P, 2, MAX_B, MAX_C, Hkv, D, device=dev, dtype=dt)
        log(f"[{name}] H={H} L={self.L} Hq={Hq} Hkv={Hkv} D={D} I={I} V={self.V} qk_norm={self.qk_norm} "
            f"bias={self.bias} kv_slots={self.P} ({self.kv.numel()*2/2**30:.1f} GiB) "
            f"free_after={torch.cuda.mem_get_info()[0]/2**30:.1f} GiB")

    def add_norm(self, x, res, w):
        """The residual add and RMSNorm before each block (x alone before the first): the residual
        and the normed input. Fused: one kernel; eager: PyTorch's ops."""
        with record_function("cat:norm"):
            if res is None:
                return (rms_c(x, w, self.eps) if FUSED else rms(x, w, self.eps)), x
            if FUSED:
                return add_rms(x, res, w, self.eps)
            with record_function("cat:elementwise"):
                res = x + res
            return rms(res, w, self.eps), res

    def rope(self, x, cos, sin, B, T):
        # NeoX rotary on x [B*T, heads, D]; cos/sin [T, 1, D] broadcast over the batch
        N, nh, D = x.shape
        x = x.view(B, T, nh, D)
        h = D // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return torch.addcmul(x * cos, rot, sin).view(N, nh, D)

    def forward(self, tokens, B, T, start, decode):
        """tokens [B*T]; positions start..start+T-1 for each sequence; decode: T == 1 and the
        sequence attends over start+1 cached keys."""
        H, D, Hq, Hkv = self.H, self.D, self.Hq, self.Hkv
        N = B * T
        with record_function("cat:other"):
            x = F.embedding(tokens, self.embed)
        x = tp_all_reduce(x)  # vocab-parallel embedding: each rank's rows, summed
        cos = self.cos[start:start + T].view(T, 1, D)
        sin = self.sin[start:start + T].view(T, 1, D)
        if FUSED:  # per-token cos/sin, gathered by position as serving engines do
            with record_function("cat:other"):
                pos = torch.arange(start, start + T, device=dev).repeat(B)
                cos_tok = self.cos[pos].view(N, 1, D)
                sin_tok = self.sin[pos].view(N, 1, D)
        res = None
        for li, lw in enumerate(self.layers):
            slot = self.kv[li % self.P]
            h, res = self.add_norm(x, res, lw["ln1"])
            with record_function("cat:gemm"):
                qkv = F.linear(h, lw["qkv"], lw["qkv_b"])
            qk = qkv[:, :(Hq + Hkv) * D].view(N, Hq + Hkv, D)
            v = qkv[:, (Hq + Hkv) * D:].view(N, Hkv, D)
            if FUSED:
                with record_function("cat:elementwise"):
                    q, k = qk_norm_rope(qk, lw["qn"], lw["kn"], Hq, self.eps, cos_tok, sin_tok, self.qk_norm)
            elif self.qk_norm:
                with record_function("cat:norm"):
                    q = rms(qk[:, :Hq], lw["qn"], self.eps)
                    k = rms(qk[:, Hq:], lw["kn"], self.eps)
                with record_function("cat:elementwise"):
                    q = self.rope(q, cos, sin, B, T)
                    k = self.rope(k, cos, sin, B, T)
            else:
                with record_function("cat:elementwise"):
                    qk = self.rope(qk, cos, sin, B, T)
                q = qk[:, :Hq]
                k = qk[:, Hq:]
            with record_function("cat:elementwise"):
                slot[0, :B, start:start + T] = k.view(B, T, Hkv, D)
                slot[1, :B, start:start + T] = v.view(B, T, Hkv, D)
            with record_function("cat:attention"):
                qh = q.view(B, T, Hq, D).transpose(1, 2)
                if decode:
                    kh = slot[0, :B, :start + 1].transpose(1, 2)
                    vh = slot[1, :B, :start + 1].transpose(1, 2)
                    a = sdpa(qh, kh, vh, False)
                else:
                    kh = k.view(B, T, Hkv, D).transpose(1, 2)
                    vh = v.view(B, T, Hkv, D).transpose(1, 2)
                    a = sdpa(qh, kh, vh, True)
                a = a.transpose(1, 2).reshape(N, Hq * D)
            with record_function("cat:gemm"):
                x = F.linear(a, lw["o"])
            x = tp_all_reduce(x)
            h, res = self.add_norm(x, res, lw["ln2"])
            with record_function("cat:gemm"):
                gu = F.linear(h, lw["gu"])
            with record_function("cat:elementwise"):
                m = silu_mul(gu, self.I) if FUSED else F.silu(gu[:, :self.I]) * gu[:, self.I:]
            with record_function("cat:gemm"):
                x = F.linear(m, lw["down"])
            x = tp_all_reduce(x)
        h, res = self.add_norm(x, res, self.norm)
        with record_function("cat:other"):
            last = h.view(B, T, H)[:, -1]
        with record_function("cat:gemm"):
            logits = F.linear(last, self.lm_head)
        with record_function("cat:other"):
            nxt = torch.argmax(logits, -1)
        return nxt


CATS = ["gemm", "attention", "norm", "elementwise", "other"]


def name_cat(n):
    s = n.lower()
    if any(t in s for t in ("flash", "fmha", "attention", "sdpa", "attn")):
        return "attention"
    if any(t in s for t in ("gemm", "nvjet", "cutlass", "xmma", "cublas", "sm90_", "sm80_", "ampere_", "splitk")):
        return "gemm"
    if "norm" in s:
        return "norm"
    if any(t in s for t in ("elementwise", "vectorized", "cat", "copy", "unrolled", "index")):
        return "elementwise"
    return "other"


def breakdown(fn):
    """Kernel time per family in us from one profiled eager call."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    out = {c: 0.0 for c in CATS}
    byname = {c: 0.0 for c in CATS}
    total = 0.0
    evs = prof.events()
    seen = set()
    for e in evs:
        dtyp = str(getattr(e, "device_type", ""))
        if "CUDA" in dtyp:
            key = (e.name, e.time_range.start, e.time_range.end)
            if key in seen:  # device events show up twice in the event list
                continue
            seen.add(key)
            d = e.time_range.elapsed_us()
            if "memset" in e.name.lower() or "memcpy" in e.name.lower():
                byname["other"] += d
            else:
                byname[name_cat(e.name)] += d
            total += d
    attributed = 0.0
    kb = {c: 0.0 for c in CATS}
    per_kernel = {}  # (range family, kernel name) -> [count, total us]
    for e in evs:
        ks = getattr(e, "kernels", None)
        if not ks:
            continue
        cat = None
        p = e
        while p is not None:
            if p.name.startswith("cat:"):
                cat = p.name[4:]
                break
            p = p.cpu_parent
        for k in ks:
            d = k.duration
            out[cat or "other"] += d
            attributed += d
            kb[name_cat(k.name)] += d
            pk = per_kernel.setdefault((cat or "other", k.name), [0, 0.0])
            pk[0] += 1
            pk[1] += d
    # The flat device-event list holds each kernel twice (seen on torch 2.11), so the kernels
    # attached to their launching ops are the reference set; kb classifies that set by name.
    log(f"  breakdown: ranges attributed {attributed:.0f} us (flat device events {total:.0f} us)")
    breakdown.per_kernel = per_kernel
    return out, attributed, kb


def time_it(fn, reps=REPS, warm=WARM):
    st = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    en = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    for i in range(reps):
        st[i].record()
        fn()
        en[i].record()
    torch.cuda.synchronize()
    ts = [s.elapsed_time(e) * 1000.0 for s, e in zip(st, en)]
    return statistics.median(ts), min(ts), max(ts)


def main():
    gpu_name = torch.cuda.get_device_name()
    gpu = "h200" if "H200" in gpu_name else ("h100" if "H100" in gpu_name else gpu_name.replace(" ", "_"))
    log(f"torch {torch.__version__} on {gpu_name} ({gpu}); budget {BUDGET}s; {'fused' if FUSED else 'eager'} elementwise")
    probe_sdpa()
    path = os.path.join(OUT, f"step_{gpu}{'_fused' if FUSED else ''}.csv")
    fh = open(path, "w", newline="")
    wr = csv.writer(fh)
    wr.writerow(["model", "phase", "batch", "tokens_or_context", "latency_us", "gemm_us", "attention_us",
                 "norm_us", "elementwise_us", "other_us", "kernel_total_us", "min_us", "max_us",
                 "gemm_byname_us", "attention_byname_us", "norm_byname_us", "elementwise_byname_us", "other_byname_us"])
    rows = []
    kfh = kwr = None
    if KERNELS:
        kfh = open(os.path.join(OUT, f"kernels_{gpu}{'_fused' if FUSED else ''}.csv"), "w", newline="")
        kwr = csv.writer(kfh)
        kwr.writerow(["model", "phase", "batch", "tokens_or_context", "range", "kernel", "count", "total_us"])
    models = ["llama-3-8b", "qwen3-8b"]
    for mi, mname in enumerate(models):
        with open(os.path.join(CFG_DIR, mname + ".json")) as f:
            cfg = json.load(f)
        m = Model(mname, cfg)
        # leave the second model its share of the time
        model_deadline = T0 + BUDGET * (0.5 if mi == 0 else 1.0)
        configs = [("prefill", b, t) for b, t in PREFILLS] + \
                  [("decode", b, c) for c in DECODE_CONTEXTS for b in DECODE_BATCHES]
        configs = [c for c in configs if c[0] in PHASES]
        for phase, B, X in configs:
            if time.time() > model_deadline:
                log(f"  SKIP {mname} {phase} B={B} X={X}: time budget")
                continue
            t1 = time.time()
            try:
                if phase == "prefill":
                    tokens = torch.randint(0, m.V, (B * X,), device=dev)
                    with torch.inference_mode():
                        fn = lambda: m.forward(tokens, B, X, 0, False)
                        med, lo, hi = time_it(fn, reps=20 if B * X >= 4096 else REPS, warm=10)
                        cats, ktot, byname = breakdown(fn)
                else:
                    tokens = torch.randint(0, m.V, (B,), device=dev)
                    with torch.inference_mode():
                        eager = lambda: m.forward(tokens, B, 1, X - 1, True)
                        g = capture_graph(eager)
                        med, lo, hi = time_it(g.replay)
                        cats, ktot, byname = breakdown(eager)
                        del g
            except Exception as ex:  # noqa
                log(f"  FAIL {mname} {phase} B={B} X={X}: {type(ex).__name__}: {ex}")
                torch.cuda.empty_cache()
                continue
            row = [mname, phase, B, X, round(med, 1)] + [round(cats[c], 1) for c in CATS] + \
                  [round(ktot, 1), round(lo, 1), round(hi, 1)] + [round(byname[c], 1) for c in CATS]
            wr.writerow(row)
            fh.flush()
            if kwr:
                for (rng, kname), (cnt, tot) in sorted(breakdown.per_kernel.items(), key=lambda kv: -kv[1][1]):
                    kwr.writerow([mname, phase, B, X, rng, kname, cnt, round(tot, 1)])
                kfh.flush()
            rows.append(row)
            log(f"  {mname} {phase:7s} B={B:3d} X={X:5d} lat={med:9.1f}us (min {lo:.1f} max {hi:.1f}) kern={ktot:9.1f} "
                + " ".join(f"{c}={cats[c]:.0f}" for c in CATS) + f"  [{time.time()-t1:.1f}s, t={time.time()-T0:.0f}s]")
        del m
        torch.cuda.empty_cache()
    fh.close()
    if kfh:
        kfh.close()
    log("\nmodel phase B X latency_us gemm attn norm elem other")
    for r in rows:
        log(" ".join(str(v) for v in r[:10]))
    log(f"done in {time.time()-T0:.0f}s")


if __name__ == "__main__":
    main()
