"""PyTorch CUDA graphs for the HRR end-to-end test: a whole training step (forward, backward,
optimizer) captured once with `torch.cuda.graph` and replayed for every batch, as the PyTorch
documentation's whole-network capture does; with --compile, the model compiled by
`torch.compile(mode="reduce-overhead")` instead (Inductor's Triton kernels, run through CUDA
graphs made by stream capture).

Fixed seeds; each batch is copied into the graph's static input before its replay (host-to-
device copies between graph launches); prints the final loss and the parameters' checksum on
stdout, so a captured run can be compared with a plain one. Timing goes to stderr.

    python3 torch_graph.py [--steps N] [--compile]
"""
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import argparse
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from params_digest import digest


def batches(n, g):
    """`n` (input, target) batches made on the CPU with generator `g`."""
    return [(torch.randn(64, 128, generator=g), torch.randint(0, 10, (64,), generator=g)) for _ in range(n)]


def whole_step_graph(model, opt, data, dev):
    """Capture one training step into a CUDA graph; replay it once per batch."""
    static_x = torch.zeros(64, 128, device=dev)
    static_y = torch.zeros(64, dtype=torch.long, device=dev)
    # Warm-up on a side stream (the allocator and cuBLAS set themselves up outside capture).
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(static_x), static_y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)

    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = F.cross_entropy(model(static_x), static_y)
        static_loss.backward()
        opt.step()
    for x, y in data:
        static_x.copy_(x.to(dev, non_blocking=False))
        static_y.copy_(y.to(dev, non_blocking=False))
        graph.replay()
    return static_loss


def compiled_steps(model, opt, data, dev):
    """The forward pass compiled with CUDA graphs (`reduce-overhead`); eager backward."""
    fwd = torch.compile(model, mode="reduce-overhead")
    loss = None
    for x, y in data:
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(fwd(x.to(dev)), y.to(dev))
        loss.backward()
        opt.step()
    return loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--compile", action="store_true")
    args = ap.parse_args()

    torch.manual_seed(1234)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 10)).to(dev)
    # capturable=True: Adam's step count stays on the device, as graph capture needs.
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    data = batches(args.steps, torch.Generator().manual_seed(42))

    t0 = time.perf_counter()
    if args.compile:
        loss = compiled_steps(model, opt, data, dev)
    else:
        loss = whole_step_graph(model, opt, data, dev)
    loss_val = loss.item()  # device-to-host copy, synchronises
    t1 = time.perf_counter()

    total, sha = digest(model)
    mode = "compile" if args.compile else "graph"
    print(f"[torch_graph] {args.steps} steps ({mode}) in {t1 - t0:.6f} s", file=sys.stderr)
    print(f"torch_graph mode={mode} steps={args.steps} loss={loss_val!r} loss_hex={float(loss_val).hex()}")
    print(f"torch_graph params sum={total!r} sha256={sha}")


if __name__ == "__main__":
    main()
