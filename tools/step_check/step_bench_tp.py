#!/usr/bin/env python3
"""The decoder step of step_bench.py under tensor parallelism, one process per GPU.

Each rank holds 1/TP of the attention heads, KV heads and MLP width (random bf16 weights, the
model's real dimensions) and all-reduces after the attention output and the MLP down projection
through NCCL, as vLLM's row-parallel layers do; decode is replayed from a CUDA graph with those
all-reduces captured in it, elementwise ops fused (step_bench.py's `fused` variant). Embedding and
LM head are vocabulary-parallel as in vLLM (an all-reduce after the embedding; each rank's share of
the logits; the gather of the logits to one rank is left out).
Rank 0 writes OUT/step_tp_<gpu>.csv: model, tp, batch, context, latency_us (median of CUDA-event
timings of the graph replay), min_us, max_us.

Usage: step_bench_tp.py OUT_DIR [models:tp,...]   e.g. llama-3-8b:2,llama-3.1-70b:4
NVLink multicast stays off (NCCL_NVLS_ENABLE=0).
"""
import json
import os
import sys

os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BATCHES = [1, 8, 32, 64, 128]
CONTEXTS = [512, 2048, 8192]


def config(name):
    for d in (os.path.join(HERE, "configs"), os.path.join(ROOT, "resources", "llm")):
        p = os.path.join(d, name + ".json")
        if os.path.exists(p):
            with open(p) as f:
                return json.load(f)
    raise SystemExit(f"step_bench_tp.py: no config for {name}")


def worker(rank, tp, name, out_dir, port, q):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=tp, device_id=torch.device("cuda", rank))
    sys.argv = ["step_bench.py", out_dir, "600", "fused"]
    sys.path.insert(0, HERE)
    import step_bench as sb  # noqa: E402  (reads sys.argv at import)

    def all_reduce(x):
        dist.all_reduce(x)
        return x

    sb.TP_ALLREDUCE = all_reduce
    cfg = dict(config(name))
    H, Hq, Hkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    cfg["head_dim"] = cfg.get("head_dim") or H // Hq
    if Hq % tp or Hkv % tp or cfg["intermediate_size"] % tp:
        raise SystemExit(f"{name}: TP {tp} does not divide the heads or the MLP width")
    cfg["num_attention_heads"] = Hq // tp
    cfg["num_key_value_heads"] = Hkv // tp
    cfg["intermediate_size"] = cfg["intermediate_size"] // tp
    m = sb.Model(f"{name}/tp{tp}", cfg)
    # vLLM's vocab-parallel LM head: each rank computes the logits of its share of the vocabulary.
    m.lm_head = m.lm_head[: (m.V + tp - 1) // tp].contiguous()
    torch.cuda.empty_cache()
    rows = []
    for C in CONTEXTS:
        for B in BATCHES:
            try:
                tokens = torch.randint(0, m.V, (B,), device="cuda")
                with torch.inference_mode():
                    g = sb.capture_graph(lambda: m.forward(tokens, B, 1, C - 1, True))
                    dist.barrier()
                    med, lo, hi = sb.time_it(g.replay)
                    del g
                t = torch.tensor([med], device="cuda")
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                rows.append([name, tp, B, C, round(t.item(), 1), round(lo, 1), round(hi, 1)])
                if rank == 0:
                    print(f"{name} tp={tp} B={B:3d} C={C:5d} {t.item():9.1f} us", flush=True)
            except torch.OutOfMemoryError:
                torch.cuda.empty_cache()
                if rank == 0:
                    print(f"{name} tp={tp} B={B} C={C}: out of memory, skipped", flush=True)
    if rank == 0:
        q.put(rows)
    dist.barrier()
    dist.destroy_process_group()


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    runs = sys.argv[2] if len(sys.argv) > 2 else "llama-3-8b:2,llama-3.1-70b:4"
    os.makedirs(out_dir, exist_ok=True)
    gpu = "h200" if "H200" in torch.cuda.get_device_name(0) else torch.cuda.get_device_name(0).replace(" ", "_")
    ctx = mp.get_context("spawn")
    rows = []
    for i, run in enumerate(runs.split(",")):
        name, tp = run.split(":")
        tp = int(tp)
        if tp > torch.cuda.device_count():
            print(f"{run}: only {torch.cuda.device_count()} GPUs, skipped", flush=True)
            continue
        q = ctx.Queue()
        procs = [ctx.Process(target=worker, args=(r, tp, name, out_dir, 29600 + i, q)) for r in range(tp)]
        for p in procs:
            p.start()
        rows += q.get()
        for p in procs:
            p.join()
    with open(os.path.join(out_dir, f"step_tp_{gpu}.csv"), "w") as f:
        f.write("model,tp,batch,context,latency_us,min_us,max_us\n")
        for r in rows:
            f.write(",".join(str(x) for x in r) + "\n")
    print(f"wrote {len(rows)} rows", flush=True)


if __name__ == "__main__":
    main()
