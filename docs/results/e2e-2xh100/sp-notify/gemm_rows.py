# Does a GEMM of 16 rows give the bytes of the same rows of a GEMM of 32?
import torch
torch.manual_seed(0)
for k, n in ((4096, 3072), (4096, 14336), (7168 // 2, 4096)):
    w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) * 0.02
    for m in (2, 16, 32, 64, 128, 256, 512, 1024):
        a = torch.randn(2 * m, k, device="cuda", dtype=torch.bfloat16)
        full = a @ w
        half = a[:m] @ w
        d = (full[:m].float() - half.float()).abs().max().item()
        print(f"k {k} n {n}: rows {m} of {2*m}: equal {torch.equal(full[:m], half)} maxdiff {d:.3g}")
