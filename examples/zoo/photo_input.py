#!/usr/bin/env python3
"""Turn a photo into an ImageNet-normalised network input (.npy).

  photo_input.py IMAGE OUT.npy [--resize 256] [--crop 224] [--layout nchw|nhwc] [--dtype float32|float16]

IMAGE is an image file or the name of one of python3-skimage's sample photos
(chelsea, coffee, rocket, astronaut, ...: the files in skimage/data). The
ImageNet evaluation transform of torchvision, done with Pillow alone:
Resize(256) (short side --resize pixels, long side int(resize * long /
short), Pillow's bilinear filter, which widens with the scale and so
anti-aliases), CenterCrop(224) (offsets rounded as torchvision does),
scaling to [0, 1] and per-channel normalisation of RGB with ImageNet's mean
(0.485, 0.456, 0.406) and standard deviation (0.229, 0.224, 0.225). OUT
holds one sample, [1, 3, crop, crop] (nchw, the default) or [1, crop, crop,
3] (nhwc), in --dtype.

The resampling filter matters for borderline photos: skimage.transform.resize
(Gaussian anti-aliasing, then bilinear) differs from Pillow's by up to 1.0 in
normalised units at sharp edges, which turns the INT8 MobileNetV2's top-1 for
rocket from 657 (missile) into 540 (drilling platform).

Needs Debian's python3-numpy, python3-pil and, for the sample photos,
python3-skimage; exits with status 3 and names the missing package.
"""
import argparse
import os
import sys

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def missing(package, error):
    print(f"photo_input.py: {package} is not installed ({error}): apt-get install {package}", file=sys.stderr)
    sys.exit(3)


def find_image(image):
    if os.path.exists(image):
        return image
    try:
        import skimage
    except ImportError as e:
        missing("python3-skimage", e)
    data = os.path.join(os.path.dirname(skimage.__file__), "data")
    for ext in (".png", ".jpg", ".jpeg"):
        if os.path.exists(os.path.join(data, image + ext)):
            return os.path.join(data, image + ext)
    sys.exit(f"photo_input.py: {image}: no such file, nor a python3-skimage sample photo in {data}")


def preprocess(path, resize, crop):
    """[crop, crop, 3] float64, normalised."""
    import numpy as np
    from PIL import Image

    with Image.open(path) as f:
        img = f.convert("RGB")
    w, h = img.size
    size = (resize, int(resize * h / w)) if w <= h else (int(resize * w / h), resize)  # (width, height)
    if min(size) < crop:
        sys.exit(f"photo_input.py: --crop {crop} is larger than the resized image {size[0]}x{size[1]}")
    img = img.resize(size, Image.BILINEAR)
    top = int(round((size[1] - crop) / 2.0))
    left = int(round((size[0] - crop) / 2.0))
    img = img.crop((left, top, left + crop, top + crop))
    x = np.asarray(img, dtype=np.float64) / 255.0
    return (x - np.array(MEAN)) / np.array(STD)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("image", help="image file or python3-skimage sample name")
    p.add_argument("out", help="the .npy to write")
    p.add_argument("--resize", type=int, default=256, help="short side after resizing (default 256)")
    p.add_argument("--crop", type=int, default=224, help="centre crop size (default 224)")
    p.add_argument("--layout", choices=("nchw", "nhwc"), default="nchw")
    p.add_argument("--dtype", choices=("float32", "float16"), default="float32")
    a = p.parse_args()
    try:
        import numpy as np
    except ImportError as e:
        missing("python3-numpy", e)
    try:
        import PIL  # noqa: F401
    except ImportError as e:
        missing("python3-pil", e)
    x = preprocess(find_image(a.image), a.resize, a.crop)
    if a.layout == "nchw":
        x = x.transpose(2, 0, 1)
    x = np.ascontiguousarray(x[None].astype(a.dtype))
    tmp = a.out + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, x)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
