#!/usr/bin/env python3
"""Export a torchvision model (random weights, eval mode) to ONNX or TorchScript.

NAME is a torchvision model or one of this project's small models (LOCAL:
tiny_unet, a U-Net with ConvTranspose2d upsampling and reflect padding).

  export_torchvision.py NAME OUT [--batch N] [--size S] [--opset N] [--seed S] [--torchscript] [--bn-stats]

The weights are torchvision's random initialisation (seeded), in eval mode.
--bn-stats first estimates the BatchNorm running statistics on a few random
batches (in train mode). Beware: that makes the random deep networks chaotic
(a tiny perturbation of any layer grows through the residual stream), so
their INT8 accuracy says more about the random weights than about the
quantizer: ResNet-50 drops from 0.9998 to 0.98 cosine with weights-only
fake quantization.

OUT ending in .pt (or --torchscript) writes a traced TorchScript archive, the
form onnx2fir accepts for PyTorch models; otherwise an ONNX file.
Needs Debian's python3-torch and python3-torchvision.
"""
import argparse
import sys


def tiny_unet():
    """A small U-Net (this project's, not torchvision's): encoder convolutions
    with reflect and replicate padding, a strided convolution and a max pool
    down, ConvTranspose2d up (2x2 stride 2; 3x3 stride 2 with padding,
    output_padding and groups; 3x3 stride 1 as the head) with skip
    concatenations. 3 input channels, 2 output channels, any even size."""
    import torch
    from torch import nn

    def block(cin, cout, **kw):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, **kw), nn.BatchNorm2d(cout), nn.ReLU())

    class TinyUNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc1 = block(3, 8, padding=1, padding_mode="reflect")
            self.down1 = block(8, 16, stride=2, padding=1)
            self.enc2 = block(16, 16, padding=1, padding_mode="replicate")
            self.pool = nn.MaxPool2d(2)
            self.mid = block(16, 32, padding=1)
            self.up1 = nn.ConvTranspose2d(32, 16, 2, stride=2)
            self.dec1 = block(32, 16, padding=1)
            self.up2 = nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1, groups=2)
            self.dec2 = block(16, 8, padding=1)
            self.head = nn.ConvTranspose2d(8, 2, 3, padding=1)

        def forward(self, x):
            e1 = self.enc1(x)
            e2 = self.enc2(self.down1(e1))
            m = self.mid(self.pool(e2))
            d1 = self.dec1(torch.cat([torch.relu(self.up1(m)), e2], 1))
            d2 = self.dec2(torch.cat([self.up2(d1), e1], 1))
            return self.head(d2)

    return TinyUNet()


# Small models of this project (not torchvision's), by name.
LOCAL = {"tiny_unet": tiny_unet}


def build(name, seed, size, bn_stats=False):
    import torch
    import torchvision

    torch.manual_seed(seed)
    ctor = LOCAL.get(name) or getattr(torchvision.models, name, None)
    kwargs = {}
    for sub in ("segmentation", "detection"):
        if ctor is None and hasattr(getattr(torchvision.models, sub), name):
            ctor = getattr(getattr(torchvision.models, sub), name)
            # Their backbones default to pretrained ImageNet weights (a download).
            kwargs = {"weights_backbone": None}
    if ctor is None:
        sys.exit(f"export_torchvision.py: unknown torchvision model '{name}'")
    if name in ("googlenet", "inception_v3"):
        kwargs = {"aux_logits": False, "init_weights": True}
    if name.startswith("vit_"):
        kwargs = {"image_size": size}
    model = ctor() if name in LOCAL else ctor(weights=None, **kwargs)
    # Estimate BatchNorm statistics on random batches (cumulative average).
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if bns and bn_stats:
        for m in bns:
            m.reset_running_stats()
            m.momentum = None
        model.train()
        g = torch.Generator().manual_seed(seed + 1)
        with torch.no_grad():
            for _ in range(3):
                model(torch.randn(4, 3, size, size, generator=g))
    model.eval()
    return model


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", help="torchvision model name, e.g. resnet50, or tiny_unet")
    p.add_argument("out", help="output file (.onnx, or .pt for TorchScript)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--size", type=int, default=224, help="input height and width")
    p.add_argument("--opset", type=int, default=13)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torchscript", action="store_true")
    p.add_argument("--bn-stats", action="store_true", help="estimate BatchNorm statistics on random batches")
    a = p.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("export_torchvision.py: python3-torch is not installed (apt-get install python3-torch python3-torchvision)")

    export(a.name, a.out, batch=a.batch, size=a.size, opset=a.opset, seed=a.seed, torchscript=a.torchscript,
           bn_stats=a.bn_stats)


def export(name, out, batch=1, size=224, opset=13, seed=0, torchscript=False, bn_stats=False):
    """Writes model NAME to OUT (ONNX, or TorchScript for .pt or torchscript)."""
    import torch

    model = build(name, seed, size, bn_stats)
    x = torch.randn(batch, 3, size, size, generator=torch.Generator().manual_seed(seed + 2))
    if torchscript or out.endswith(".pt"):
        with torch.no_grad():
            torch.jit.trace(model, x).save(out)
    else:
        # Not under no_grad: there nn.MultiheadAttention takes a fused fast path
        # (aten::_native_multi_head_attention) that the ONNX exporter cannot write.
        torch.onnx.export(model, x, out, opset_version=opset, input_names=["input"],
                          output_names=["output"], do_constant_folding=True)


if __name__ == "__main__":
    main()
