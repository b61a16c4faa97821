# SPDX-License-Identifier: GPL-3.0-or-later
"""perfloom's fused-MoE Triton kernel, in the design serving engines use.

The assignments (token, expert) of a batch are sorted by expert and each expert's run is padded
to a multiple of BLOCK_SIZE_M (`align`); every BLOCK_SIZE_M-row block of the sorted list then
belongs to one expert, so one launch computes all experts' GEMMs: a program takes one row block
and one BLOCK_SIZE_N column block, gathers its token rows from the activations, and multiplies
them by that expert's weight. The same kernel serves both GEMMs of the expert MLP:

- gate-up: A is the hidden states [T, H] (row = assignment // topk), B is w1 [E, 2I, H], C is
  [T*topk, 2I]; the routing weight is not applied.
- down:    A is the activated intermediate [T*topk, I] (row = assignment), B is w2 [E, H, I],
  C is [T*topk, H]; the routing weight is applied, so the combine is a plain sum over topk.

Weights are bf16, or fp8 e4m3 with a per-expert scale ("fp8", activations quantized per tensor)
or 128x128 block scales ("fp8_block", activations quantized per token and 128-column group).
"""
import torch
import triton
import triton.language as tl

FP8_MAX = 448.0
GROUP = 128  # block-scale group (rows and columns of a weight block, columns of an activation group)


@triton.jit(do_not_specialize=["EM", "num_valid"])
def moe_gemm_kernel(
    a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, topk_w_ptr,
    sorted_ids_ptr, expert_ids_ptr, num_post_ptr,
    N, K, EM, num_valid, a_row_div,
    stride_am, stride_ak, stride_be, stride_bn, stride_bk, stride_cm, stride_cn,
    stride_asm, stride_ask, stride_bse, stride_bsn, stride_bsk,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, MUL_WEIGHT: tl.constexpr, QUANT: tl.constexpr,
    GROUP_N: tl.constexpr, GROUP_K: tl.constexpr,
):
    # Programs are numbered so that GROUP_SIZE_M consecutive row blocks share each column block:
    # neighbours in launch order reuse the same weight tile through L2.
    pid = tl.program_id(0)
    n_blocks_m = tl.cdiv(EM, BLOCK_SIZE_M)
    n_blocks_n = tl.cdiv(N, BLOCK_SIZE_N)
    per_group = GROUP_SIZE_M * n_blocks_n
    group = pid // per_group
    first_m = group * GROUP_SIZE_M
    rows_in_group = tl.minimum(n_blocks_m - first_m, GROUP_SIZE_M)
    local = pid % per_group
    pid_m = first_m + local % rows_in_group
    pid_n = local // rows_in_group

    # The sorted list is sized for the worst case; blocks past the padded total do nothing.
    if pid_m * BLOCK_SIZE_M >= tl.load(num_post_ptr):
        return

    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    assign = tl.load(sorted_ids_ptr + offs_m).to(tl.int64)
    valid = assign < num_valid  # padding rows hold num_valid
    a_row = assign // a_row_div
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)

    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    # Column indices wrap inside N so the weight loads need no column mask; the store masks them.
    offs_n_ld = offs_n % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + a_row[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + expert * stride_be + offs_n_ld[None, :] * stride_bn + offs_k[:, None] * stride_bk

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        k_left = K - kb * BLOCK_SIZE_K
        a = tl.load(a_ptrs, mask=valid[:, None] & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        if QUANT == 2:
            kg = (kb * BLOCK_SIZE_K) // GROUP_K
            a_s = tl.load(a_scale_ptr + a_row * stride_asm + kg * stride_ask, mask=valid, other=0.0)
            b_s = tl.load(b_scale_ptr + expert * stride_bse + (offs_n_ld // GROUP_N) * stride_bsn + kg * stride_bsk)
            acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        else:
            acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if QUANT == 1:
        acc = acc * (tl.load(a_scale_ptr) * tl.load(b_scale_ptr + expert))
    if MUL_WEIGHT:
        w = tl.load(topk_w_ptr + assign, mask=valid, other=0.0)
        acc = acc * w[:, None]
    c_ptrs = c_ptr + assign[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=valid[:, None] & (offs_n[None, :] < N))


def max_padded(n_assign, E, block_m):
    """Length of the sorted list: every expert that receives tokens pads at most block_m - 1 rows,
    and at most n_assign experts receive any."""
    rows = min(n_assign * block_m, n_assign + E * (block_m - 1))
    return (rows + block_m - 1) // block_m * block_m


def align(topk_ids, E, block_m):
    """Sort the assignments by expert and pad each expert's run to block_m, without a host sync.

    Returns (sorted_ids [EM] int32, with num_valid in padding slots; expert_ids [EM/block_m] int32;
    num_post [1] int32, the padded total)."""
    flat = topk_ids.reshape(-1)
    n = flat.numel()
    dev = flat.device
    em = max_padded(n, E, block_m)
    counts = torch.zeros(E, dtype=torch.int32, device=dev)
    counts.scatter_add_(0, flat.long(), torch.ones_like(flat, dtype=torch.int32))
    padded = (counts + block_m - 1) // block_m * block_m
    pend = torch.cumsum(padded, 0, dtype=torch.int32)
    cend = torch.cumsum(counts, 0, dtype=torch.int32)
    order = torch.argsort(flat, stable=True)
    exp_sorted = flat[order].long()
    rank = torch.arange(n, device=dev, dtype=torch.int32) - (cend - counts)[exp_sorted]
    dest = (pend - padded)[exp_sorted] + rank
    sorted_ids = torch.full((em,), n, dtype=torch.int32, device=dev)
    sorted_ids[dest.long()] = order.to(torch.int32)
    blocks = torch.arange(em // block_m, device=dev, dtype=torch.int32)
    expert_ids = torch.searchsorted(pend // block_m, blocks, right=True).clamp_(max=E - 1).to(torch.int32)
    return sorted_ids, expert_ids, pend[-1:].contiguous()


def route(logits, topk):
    """Softmax over the experts, top-k, renormalised (Mixtral/Qwen-style routing)."""
    p = torch.softmax(logits.float(), dim=-1)
    w, ids = torch.topk(p, topk, dim=-1)
    w = w / w.sum(dim=-1, keepdim=True)
    return w, ids.to(torch.int32)


def combine(c, T, topk):
    """Sum over the top-k of the down outputs (already weighted): [T*topk, H] -> [T, H]."""
    return c.view(T, topk, -1).sum(dim=1)


def quantize_weight(w, mode):
    """fp8 e4m3 copy of w [E, N, K] and its scales: per expert [E] ("fp8") or per 128x128 block
    [E, ceil(N/128), ceil(K/128)] ("fp8_block"). One expert at a time keeps the fp32 temporaries small."""
    E, N, K = w.shape
    q = torch.empty((E, N, K), dtype=torch.float8_e4m3fn, device=w.device)
    if mode == "fp8":
        s = torch.empty(E, dtype=torch.float32, device=w.device)
        for e in range(E):
            we = w[e].float()
            s[e] = we.abs().amax().clamp(min=1e-12) / FP8_MAX
            q[e] = (we / s[e]).to(torch.float8_e4m3fn)
        return q, s
    gn, gk = triton.cdiv(N, GROUP), triton.cdiv(K, GROUP)
    s = torch.empty((E, gn, gk), dtype=torch.float32, device=w.device)
    for e in range(E):
        we = torch.zeros((gn * GROUP, gk * GROUP), dtype=torch.float32, device=w.device)
        we[:N, :K] = w[e].float()
        blocks = we.view(gn, GROUP, gk, GROUP)
        se = blocks.abs().amax(dim=(1, 3)).clamp(min=1e-12) / FP8_MAX
        s[e] = se
        q[e] = (blocks / se[:, None, :, None]).view(gn * GROUP, gk * GROUP)[:N, :K].to(torch.float8_e4m3fn)
    return q, s


def quantize_act(a, mode):
    """fp8 activations: one scale for the tensor ("fp8", shape [1]) or per row and 128-column group
    ("fp8_block", [rows, ceil(K/128)])."""
    if mode == "fp8":
        s = (a.float().abs().amax().clamp(min=1e-12) / FP8_MAX).reshape(1)
        return (a.float() / s).to(torch.float8_e4m3fn), s
    rows, K = a.shape
    gk = triton.cdiv(K, GROUP)
    ap = torch.zeros((rows, gk * GROUP), dtype=torch.float32, device=a.device)
    ap[:, :K] = a.float()
    g = ap.view(rows, gk, GROUP)
    s = g.abs().amax(dim=2).clamp(min=1e-12) / FP8_MAX
    q = (g / s[:, :, None]).view(rows, gk * GROUP)[:, :K].to(torch.float8_e4m3fn)
    return q.contiguous(), s.contiguous()


QUANT_CODE = {"bf16": 0, "fp8": 1, "fp8_block": 2}


def launch(cfg, a, w, c, sorted_ids, expert_ids, num_post, num_valid, a_row_div, mode,
           a_scale=None, w_scale=None, topk_w=None):
    """One fused-MoE GEMM: C[assign] = A[assign // a_row_div] @ w[expert].T (times the routing
    weight when topk_w is given). cfg holds BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages;
    sorted_ids and expert_ids must come from align() with the same BLOCK_SIZE_M."""
    E, N, K = w.shape
    bm, bn = cfg["BLOCK_SIZE_M"], cfg["BLOCK_SIZE_N"]
    em = sorted_ids.numel()
    q = QUANT_CODE[mode]
    dummy = num_post  # any valid pointer for the arguments a mode does not read
    a_s = a_scale if a_scale is not None else dummy
    b_s = w_scale if w_scale is not None else dummy
    if q == 2:
        sasm, sask = a_scale.stride(0), a_scale.stride(1)
        sbse, sbsn, sbsk = w_scale.stride(0), w_scale.stride(1), w_scale.stride(2)
    else:
        sasm = sask = sbse = sbsn = sbsk = 0
    grid = (triton.cdiv(em, bm) * triton.cdiv(N, bn),)
    moe_gemm_kernel[grid](
        a, w, c, a_s, b_s, topk_w if topk_w is not None else dummy,
        sorted_ids, expert_ids, num_post,
        N, K, em, num_valid, a_row_div,
        a.stride(0), a.stride(1), w.stride(0), w.stride(1), w.stride(2), c.stride(0), c.stride(1),
        sasm, sask, sbse, sbsn, sbsk,
        BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=cfg["BLOCK_SIZE_K"],
        GROUP_SIZE_M=cfg["GROUP_SIZE_M"], MUL_WEIGHT=topk_w is not None, QUANT=q,
        GROUP_N=GROUP, GROUP_K=GROUP,
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
    )
    return c


def reference(a, w, topk_ids, a_row_div, topk_w=None, a_scale=None, w_scale=None, mode="bf16"):
    """Plain PyTorch in fp32 on the dequantized operands: out[i] = A[i // a_row_div] @ w[e_i].T."""
    flat = topk_ids.reshape(-1).long()
    n = flat.numel()
    E, N, K = w.shape
    out = torch.zeros((n, N), dtype=torch.float32, device=a.device)
    rows = torch.arange(n, device=a.device) // a_row_div
    if mode == "fp8_block":
        gk = a_scale.shape[1]
        af = (a.float() * a_scale.repeat_interleave(GROUP, dim=1)[:, :K]) if gk else a.float()
    elif mode == "fp8":
        af = a.float() * a_scale
    else:
        af = a.float()
    for e in torch.unique(flat).tolist():
        idx = (flat == e).nonzero().squeeze(1)
        we = w[e].float()
        if mode == "fp8":
            we = we * w_scale[e]
        elif mode == "fp8_block":
            we = we * w_scale[e].repeat_interleave(GROUP, 0).repeat_interleave(GROUP, 1)[:N, :K]
        out[idx] = af[rows[idx]] @ we.T
    if topk_w is not None:
        out *= topk_w.reshape(-1, 1).float()
    return out
