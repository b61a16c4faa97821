#!/usr/bin/env python3
"""Real torch.profiler traces of Hugging Face models, as a user would record them.

Builds each model from its published config.json with random weights (no download: the kernels and
their shapes are what the architecture implies, the values do not matter for timing), then profiles

  eager-prefill   one eager forward of B sequences of S tokens (transformers' SDPA attention)
  eager-decode    eager greedy decoding of a few tokens with the dynamic KV cache
  graph-decode    decoding steps of a torch.compile(mode="reduce-overhead") model with a static KV
                  cache: Inductor's Triton kernels replayed from CUDA graphs, the way serving engines
                  (vLLM, SGLang) run decode

and writes one Chrome-trace JSON (gzip) per model and scenario under --out, with record_shapes so
that each kernel's launching op carries its input dims, dtypes and concrete inputs.

  python3 tools/collector/model_traces.py --out DIR [--models llama-3-8b,qwen2.5-1.5b]
"""
import argparse
import gzip
import json
import os
import shutil
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(os.path.abspath(__file__))
LLM_DIR = os.path.join(HERE, "..", "..", "resources", "llm")

# Qwen2.5-1.5B's published config.json (huggingface.co/Qwen/Qwen2.5-1.5B), the fields that shape it.
QWEN25_1_5B = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
    "hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
    "num_attention_heads": 12, "num_key_value_heads": 2, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True,
    "vocab_size": 151936, "torch_dtype": "bfloat16", "use_sliding_window": False,
}


def load_config(name):
    from transformers import AutoConfig
    if name == "qwen2.5-1.5b":
        raw = dict(QWEN25_1_5B)
    else:
        with open(os.path.join(LLM_DIR, name + ".json")) as f:
            raw = json.load(f)
    model_type = raw.pop("model_type")
    for k in ("architectures", "transformers_version", "torch_dtype"):
        raw.pop(k, None)
    return AutoConfig.for_model(model_type, **raw)


def build(name):
    from transformers import AutoModelForCausalLM
    cfg = load_config(name)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg)
    return model.to(torch.bfloat16).eval(), cfg


def save(prof, out, stem, meta):
    raw = os.path.join(out, stem + ".json")
    prof.export_chrome_trace(raw)
    with open(raw, "rb") as f, gzip.open(raw + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    os.remove(raw)
    kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    meta[stem] = {"bytes_gz": os.path.getsize(raw + ".gz"), "cuda_events": kernels}
    print(f"{stem}: {os.path.getsize(raw + '.gz') / 1e6:.2f} MB gz, {kernels} device events", flush=True)


def activities():
    return [ProfilerActivity.CPU, ProfilerActivity.CUDA]


def eager_prefill(name, model, cfg, out, meta, batch, seq):
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
    with torch.no_grad():
        for _ in range(2):
            model(ids, use_cache=False)
        torch.cuda.synchronize()
        with profile(activities=activities(), record_shapes=True) as prof:
            model(ids, use_cache=False)
            torch.cuda.synchronize()
    save(prof, out, f"{name}_eager-prefill_b{batch}s{seq}", meta)


def eager_decode(name, model, cfg, out, meta, batch, prompt, new):
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device="cuda")
    kw = dict(max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0)
    with torch.no_grad():
        model.generate(ids, **kw)
        torch.cuda.synchronize()
        with profile(activities=activities(), record_shapes=True) as prof:
            model.generate(ids, **kw)
            torch.cuda.synchronize()
    save(prof, out, f"{name}_eager-decode_b{batch}p{prompt}n{new}", meta)


def graph_decode(name, model, cfg, out, meta, batch, prompt, steps):
    from transformers import StaticCache
    max_len = prompt + steps + 8
    cache = StaticCache(config=cfg, max_cache_len=max_len)
    ids = torch.randint(0, cfg.vocab_size, (batch, prompt), device="cuda")
    with torch.no_grad():
        pos = torch.arange(prompt, device="cuda")
        logits = model(ids, past_key_values=cache, cache_position=pos, use_cache=True).logits
        tok = logits[:, -1:].argmax(-1)
        step = torch.compile(lambda t, p: model(t, past_key_values=cache, cache_position=p, use_cache=True).logits,
                             mode="reduce-overhead", fullgraph=False)
        p = prompt
        t0 = time.time()
        for _ in range(3):  # compile and record the graph
            tok = step(tok, torch.tensor([p], device="cuda"))[:, -1:].argmax(-1)
            p += 1
        torch.cuda.synchronize()
        print(f"{name}: compiled decode in {time.time() - t0:.0f} s", flush=True)
        with profile(activities=activities(), record_shapes=True) as prof:
            for _ in range(steps):
                tok = step(tok, torch.tensor([p], device="cuda"))[:, -1:].argmax(-1)
                p += 1
            torch.cuda.synchronize()
    save(prof, out, f"{name}_graph-decode_b{batch}p{prompt}n{steps}", meta)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="llama-3-8b,qwen2.5-1.5b")
    ap.add_argument("--skip-graph", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    import transformers
    meta["transformers"] = transformers.__version__
    for name in a.models.split(","):
        model, cfg = build(name)
        for fn, args in ((eager_prefill, (4, 1024)), (eager_decode, (8, 512, 4)),
                         (graph_decode, (8, 512, 4))):
            if fn is graph_decode and a.skip_graph:
                continue
            try:
                fn(name, model, cfg, a.out, meta, *args)
            except Exception as e:  # one failed scenario must not lose the others
                print(f"{name} {fn.__name__} failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                meta[f"{name}_{fn.__name__}_error"] = f"{type(e).__name__}: {e}"
        del model
        torch.cuda.empty_cache()
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


if __name__ == "__main__":
    main()
