"""Triton workload for the HRR end-to-end test: one vector-add kernel.

The inputs are made on the CPU with a fixed generator and uploaded, the result
comes back with .cpu(); its float64 sum and SHA-256 go to stdout. The kernel's
name, `add_kernel`, is what `hrr-playback --info` must show.
"""
import hashlib

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def main():
    n = 98432  # not a multiple of the block size: the mask matters
    g = torch.Generator().manual_seed(7)
    x = torch.rand(n, generator=g).cuda()
    y = torch.rand(n, generator=g).cuda()
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    add_kernel[grid](x, y, out, n, BLOCK_SIZE=1024)
    res = out.cpu()
    ok = torch.equal(res, x.cpu() + y.cpu())
    digest = hashlib.sha256(res.numpy().tobytes()).hexdigest()
    print(f"triton_add n={n} sum={res.double().sum().item()!r} sha256={digest} {'ok' if ok else 'MISMATCH'}")


if __name__ == "__main__":
    main()
