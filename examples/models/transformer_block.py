#!/usr/bin/env python3
"""Export one transformer encoder block (random weights, eval mode) to ONNX.

  transformer_block.py OUT.onnx [--seq 128] [--dim 256] [--heads 4] [--ffn 1024] [--batch 1] [--seed 0]

A pre-norm encoder block as in ViT/BERT-style models:
  x + Wo(attention(LN(x)))  then  x + W2(GELU(W1(LN(x))))
with the query/key/value projections as separate Linear layers. The linear
layers (constant weights) become dense layers on the chip; layer norm,
softmax and the activation x activation matmuls (Q K^T, P V) run on the cpu
as onnx2fir lowers them. Used by the architecture sweep (examples/dse) as
the network beyond CNNs. Needs Debian's python3-torch.
"""
import argparse
import math


def build(dim, heads, ffn, seed):
    import torch
    from torch import nn

    torch.manual_seed(seed)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = heads
            self.scale = 1.0 / math.sqrt(dim // heads)
            self.ln1 = nn.LayerNorm(dim)
            self.q = nn.Linear(dim, dim)
            self.k = nn.Linear(dim, dim)
            self.v = nn.Linear(dim, dim)
            self.o = nn.Linear(dim, dim)
            self.ln2 = nn.LayerNorm(dim)
            self.fc1 = nn.Linear(dim, ffn)
            self.act = nn.GELU()
            self.fc2 = nn.Linear(ffn, dim)

        def forward(self, x):
            b, t, d = x.shape
            hd = d // self.heads
            h = self.ln1(x)
            q = self.q(h).reshape(b, t, self.heads, hd).transpose(1, 2)
            k = self.k(h).reshape(b, t, self.heads, hd).transpose(1, 2)
            v = self.v(h).reshape(b, t, self.heads, hd).transpose(1, 2)
            att = torch.softmax(torch.matmul(q, k.transpose(2, 3)) * self.scale, dim=-1)
            y = torch.matmul(att, v).transpose(1, 2).reshape(b, t, d)
            x = x + self.o(y)
            return x + self.fc2(self.act(self.fc1(self.ln2(x))))

    return Block().eval()


def main():
    import torch

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.dim % a.heads:
        ap.error("--dim must be a multiple of --heads")
    model = build(a.dim, a.heads, a.ffn, a.seed)
    x = torch.zeros(a.batch, a.seq, a.dim)
    with torch.no_grad():
        torch.onnx.export(model, x, a.out, opset_version=13, input_names=["x"], output_names=["y"])


if __name__ == "__main__":
    main()
