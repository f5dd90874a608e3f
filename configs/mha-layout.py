# The seed document's multi-head attention layer (section 6.1), as one
# `infer layout` program: B=2, S=4096, H=32 heads of D=128 (hidden 4096).
#
#   go run ./cmd/infer layout -f configs/mha-layout.py
#
# Every row is evaluated on meta tensors (nothing is allocated) with
# PyTorch 1.13's layout rules. It is plain PyTorch too: with
# `from torch import empty` in front, python3 runs it.
Q = empty(2, 4096, 4096)   # x @ Wq.T (one projection each for Q, K, V)
K = empty(2, 4096, 4096)
V = empty(2, 4096, 4096)
q = Q.view(2, 4096, 32, 128).transpose(1, 2)   # split heads, heads forward: a view
k = K.view(2, 4096, 32, 128).transpose(1, 2)
v = V.view(2, 4096, 32, 128).transpose(1, 2)
scores = q @ k.transpose(-2, -1) / 128**0.5    # [2, 32, 4096, 4096], new
attn = scores.softmax(-1)
out = (attn @ v).transpose(1, 2).contiguous().view(2, 4096, 4096)   # the copy: 128 MiB
