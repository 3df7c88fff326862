"""PyTorch workload for the HRR benchmark: training steps of a small GPT-2-like decoder.

Six pre-norm decoder layers (causal self-attention written out as matmuls and a softmax, so
the kernels are cuBLAS GEMMs and PyTorch's own, a GELU MLP), tied embeddings, bf16 autocast,
AdamW. Fixed seed, deterministic algorithms; prints the final loss and a checksum of every
parameter on stdout (a captured run must print the same), and on stderr
"[transformer] N steps in X s" for the timed steps (after two warm-up steps) and
"[transformer] step S s" for their mean.

    python3 transformer.py [--steps N] [--layers L] [--width D] [--seq T] [--batch B]
"""
import os

# Must be set before cuBLAS is initialised.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import argparse
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from params_digest import digest


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x, mask):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, t, h, d // h).transpose(1, 2)
        v = v.view(b, t, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        att = att.masked_fill(mask[:t, :t] == 0, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class Decoder(nn.Module):
    def __init__(self, vocab, d, layers, heads, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)))

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x, self.mask)
        return self.ln(x) @ self.tok.weight.t()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--width", type=int, default=384)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()

    torch.manual_seed(1234)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    dev = torch.device("cuda")
    vocab = 4096
    model = Decoder(vocab, args.width, args.layers, 6, args.seq)
    g = torch.Generator().manual_seed(42)
    data = torch.randint(0, vocab, (args.batch, args.seq + 1), generator=g)
    model = model.to(dev)
    data = data.to(dev)
    x, y = data[:, :-1], data[:, 1:]
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
        loss = F.cross_entropy(logits.float().view(-1, vocab), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    for _ in range(2):  # warm-up: allocator, cuBLAS handles, lazily loaded kernels
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        loss = step()
    loss_val = loss.item()  # device-to-host copy, synchronises
    t1 = time.perf_counter()

    total, sha = digest(model)
    print(f"[transformer] {args.steps} steps in {t1 - t0:.6f} s", file=sys.stderr)
    print(f"[transformer] step {(t1 - t0) / args.steps:.6f} s", file=sys.stderr)
    print(f"transformer steps={args.steps} loss={loss_val!r} loss_hex={float(loss_val).hex()}")
    print(f"transformer params sum={total!r} sha256={sha}")


if __name__ == "__main__":
    main()
