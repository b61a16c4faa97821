#!/usr/bin/env python3
"""NCCL collectives over message sizes, on every GPU of one host, through PyTorch.

    python3 tools/collector/nccl_torch.py --ranks 2,4 --out OUTDIR

For each rank count (a prefix of the host's GPUs), each op (all_reduce, all_gather) and each
message size (1 KiB .. 1 GiB, bf16), rank 0 records a CUDA event pair around every call after a
barrier-aligned warm-up; the row holds the median, p10 and p90 of those per-call times. `bytes` is
the full buffer in the convention of perfloom's communication model (model/families/communication):
the all-reduced tensor, or the all-gather *output*. A second pass replays each op from a CUDA graph
(the way vLLM runs decode) for sizes up to 64 MiB. Output: OUTDIR/nccl.csv (collector CSV format,
tools/collector/FORMAT.md style: one header row) and OUTDIR/nccl_env.txt.

NVLink multicast (NVLS) stays off: NCCL_NVLS_ENABLE=0 (the host's GPUs are shared).
"""
import argparse
import os
import statistics
import sys

os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
os.environ["NVSHMEM_DISABLE_NVLS"] = "1"

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

SIZES = [1 << e for e in range(10, 31)]  # 1 KiB .. 1 GiB
GRAPH_MAX_BYTES = 64 << 20


def reps_for(nbytes):
    if nbytes <= (1 << 20):
        return 200
    if nbytes <= (64 << 20):
        return 50
    return 12


def percentile(xs, q):
    s = sorted(xs)
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def make_call(op, nbytes, world, dev):
    elems = nbytes // 2
    if op == "allreduce":
        buf = torch.randn(elems, dtype=torch.bfloat16, device=dev)
        return lambda: dist.all_reduce(buf)
    # all_gather: `nbytes` is the output; each rank contributes nbytes / world.
    out = torch.empty(elems, dtype=torch.bfloat16, device=dev)
    inp = torch.randn(elems // world, dtype=torch.bfloat16, device=dev)
    return lambda: dist.all_gather_into_tensor(out, inp)


def time_eager(call, reps, dev):
    for _ in range(5):
        call()
    torch.cuda.synchronize(dev)
    dist.barrier()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        call()
        b.record()
        times.append((a, b))
    torch.cuda.synchronize(dev)
    return [a.elapsed_time(b) * 1000.0 for a, b in times]


def time_graph(call, reps, dev):
    # Capture `inner` calls in one graph; the per-call time is a replay over `inner`.
    inner = 20
    s = torch.cuda.Stream(device=dev)
    s.wait_stream(torch.cuda.current_stream(dev))
    with torch.cuda.stream(s):
        for _ in range(3):
            call()
    torch.cuda.current_stream(dev).wait_stream(s)
    torch.cuda.synchronize(dev)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(inner):
            call()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize(dev)
    dist.barrier()
    times = []
    for _ in range(max(5, reps // inner)):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        times.append((a, b))
    torch.cuda.synchronize(dev)
    del g
    return [a.elapsed_time(b) * 1000.0 / inner for a, b in times]


def worker(rank, world, port, rows_queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    rows = []
    for mode in ("eager", "graph"):
        for op in ("allreduce", "allgather"):
            for nbytes in SIZES:
                if mode == "graph" and nbytes > GRAPH_MAX_BYTES:
                    continue
                call = make_call(op, nbytes, world, dev)
                reps = reps_for(nbytes)
                t = time_eager(call, reps, dev) if mode == "eager" else time_graph(call, reps, dev)
                # The collective ends when the slowest rank ends: take the max of the ranks' medians.
                med = torch.tensor([statistics.median(t)], device=dev)
                dist.all_reduce(med, op=dist.ReduceOp.MAX)
                if rank == 0:
                    rows.append((op, "bf16", nbytes, world, mode, med.item(), percentile(t, 0.1),
                                 percentile(t, 0.9), len(t)))
                    if nbytes in (1 << 10, 1 << 20, 1 << 26, 1 << 30):
                        print(f"ranks={world} {mode:5s} {op:9s} {nbytes:>11d} B  {med.item():10.1f} us",
                              flush=True)
                del call
                torch.cuda.empty_cache()
    if rank == 0:
        rows_queue.put(rows)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--out", default=os.environ.get("OUT", "nccl-out"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    n_gpus = torch.cuda.device_count()
    ranks = [int(r) for r in args.ranks.split(",") if int(r) <= n_gpus]
    if not ranks:
        sys.exit(f"nccl_torch.py: this host has {n_gpus} GPU(s); asked for ranks {args.ranks}")
    with open(os.path.join(args.out, "nccl_env.txt"), "w") as f:
        f.write(f"gpu={torch.cuda.get_device_name(0)}\ngpus={n_gpus}\n")
        f.write(f"torch={torch.__version__}\ncuda={torch.version.cuda}\nnccl={torch.cuda.nccl.version()}\n")
        f.write("NCCL_NVLS_ENABLE=0\n")
        f.write(os.popen("nvidia-smi topo -m 2>&1").read())
    ctx = mp.get_context("spawn")
    all_rows = []
    for i, world in enumerate(ranks):
        q = ctx.Queue()
        procs = [ctx.Process(target=worker, args=(r, world, 29500 + i, q)) for r in range(world)]
        for p in procs:
            p.start()
        all_rows += q.get()
        for p in procs:
            p.join()
            if p.exitcode != 0:
                sys.exit(f"nccl_torch.py: rank process exited with {p.exitcode}")
    with open(os.path.join(args.out, "nccl.csv"), "w") as f:
        f.write("op,dtype,bytes,ranks,mode,median_us,p10_us,p90_us,reps\n")
        for r in all_rows:
            f.write(",".join(str(x) if not isinstance(x, float) else f"{x:.3f}" for x in r) + "\n")
    print(f"wrote {len(all_rows)} rows to {args.out}/nccl.csv")


if __name__ == "__main__":
    main()
