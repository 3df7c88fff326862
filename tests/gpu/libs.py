"""CUDA math-library workloads for the HRR end-to-end test: the libraries' own kernels.

    python3 libs.py MODE      MODE: cupy_fft cupy_rand cupy_sparse torch_fft conv2d solve

Each mode makes its inputs on the CPU with a fixed generator (or a fixed device seed), runs one
library operation on the GPU and copies the result back; the SHA-256 of the result bytes and a
self-check against a CPU computation (where one exists) go to stdout, so a replay that ran the
library's kernels compares real bytes. Exit 0 when the self-check passes, 1 otherwise, 3 when the
mode's library is missing (the e2e script reports that as a skip).
"""
import hashlib
import sys

import numpy as np


def digest(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def report(name, ok, arr):
    print(f"{name} shape={tuple(arr.shape)} sha256={digest(arr)} {'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


def cupy_fft():
    import cupy as cp

    x = np.random.default_rng(1).standard_normal((64, 256)).astype(np.complex64)
    y = cp.fft.fft(cp.asarray(x), axis=1).get()  # cuFFT's kernels
    return report("cupy_fft", np.allclose(y, np.fft.fft(x, axis=1), atol=1e-2), y)


def cupy_rand():
    import cupy as cp
    from cupy import cuda

    gen = cp.random.RandomState(seed=1234)  # cuRAND's generator kernels
    a = gen.standard_normal(1 << 16, dtype=cp.float32).get()
    # Deterministic for a seed: a second generator of the same seed gives the same bytes.
    b = cp.random.RandomState(seed=1234).standard_normal(1 << 16, dtype=cp.float32).get()
    cuda.Device().synchronize()
    ok = np.array_equal(a, b) and abs(float(a.mean())) < 0.05
    return report("cupy_rand", ok, a)


def cupy_sparse():
    import cupy as cp
    import cupyx.scipy.sparse as sp

    rng = np.random.default_rng(2)
    dense = rng.standard_normal((512, 512)).astype(np.float32)
    dense[rng.random((512, 512)) < 0.95] = 0
    v = rng.standard_normal(512).astype(np.float32)
    m = sp.csr_matrix(cp.asarray(dense))
    y = (m @ cp.asarray(v)).get()  # cuSPARSE SpMV
    return report("cupy_sparse", np.allclose(y, dense @ v, atol=1e-3), y)


def torch_fft():
    import torch

    x = torch.randn(128, 1024, generator=torch.Generator().manual_seed(3))
    y = torch.fft.rfft(x.cuda(), dim=1).cpu()
    ok = torch.allclose(y, torch.fft.rfft(x, dim=1), atol=1e-3)
    return report("torch_fft", ok, torch.view_as_real(y).numpy())


def conv2d():
    import torch

    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    g = torch.Generator().manual_seed(4)
    x = torch.randn(8, 16, 32, 32, generator=g)
    w = torch.randn(32, 16, 3, 3, generator=g)
    y = torch.nn.functional.conv2d(x.cuda(), w.cuda(), padding=1).cpu()  # cuDNN
    ok = torch.allclose(y, torch.nn.functional.conv2d(x, w, padding=1), atol=1e-2, rtol=1e-3)
    return report("conv2d", ok and torch.backends.cudnn.is_available(), y.numpy())


def solve():
    import torch

    g = torch.Generator().manual_seed(5)
    a = torch.randn(256, 256, generator=g, dtype=torch.float64) + 256 * torch.eye(256, dtype=torch.float64)
    b = torch.randn(256, 4, generator=g, dtype=torch.float64)
    x = torch.linalg.solve(a.cuda(), b.cuda()).cpu()  # cuSOLVER (getrf/getrs)
    return report("solve", torch.allclose(a @ x, b, atol=1e-8), x.numpy())


MODES = {f.__name__: f for f in (cupy_fft, cupy_rand, cupy_sparse, torch_fft, conv2d, solve)}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in MODES:
        sys.exit(f"usage: libs.py {{{'|'.join(MODES)}}}")
    try:
        sys.exit(MODES[sys.argv[1]]())
    except ImportError as e:
        print(f"libs.py: {e}", file=sys.stderr)
        sys.exit(3)
