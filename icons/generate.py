#!/usr/bin/env python3
"""Draws AMC's icons: the app icon and the menu-bar template image.

The glyph is a speech bubble with a spark at its corner: a conversation an agent may take
part in. Everything is drawn at 8x and scaled down, so edges are smooth at every size.
Run from anywhere: `python3 icons/generate.py` (needs Pillow: `pip install pillow` or the
`python3-pil` package). The output is deterministic, so the committed files can be checked
against a fresh run.
"""

from pathlib import Path

from PIL import Image, ImageDraw

HERE = Path(__file__).resolve().parent
SS = 8  # supersampling factor


def spark(draw, cx, cy, r, fill):
    """A four-pointed star centred on (cx, cy) with arm length r."""
    w = r * 0.28
    pts = [
        (cx, cy - r), (cx + w, cy - w), (cx + r, cy), (cx + w, cy + w),
        (cx, cy + r), (cx - w, cy + w), (cx - r, cy), (cx - w, cy - w),
    ]
    draw.polygon(pts, fill=fill)


def bubble(draw, box, radius, tail, fill=None, outline=None, width=0):
    """A rounded speech bubble in box (x0, y0, x1, y1) with a tail at its lower left."""
    x0, y0, x1, y1 = box
    draw.rounded_rectangle(box, radius=radius, fill=fill, outline=outline, width=width)
    # The tail: a triangle from the bubble's bottom edge down to the left.
    tx = x0 + (x1 - x0) * 0.22
    pts = [(tx, y1 - width), (tx + tail * 1.1, y1 - width), (tx - tail * 0.35, y1 + tail)]
    draw.polygon(pts, fill=fill if fill else outline)


def app_icon(size):
    s = size * SS
    img = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    # Background: a rounded square with a vertical gradient (indigo to blue), inset like
    # macOS app icons (824/1024 of the canvas).
    inset = s * 100 // 1024
    bg = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    grad = Image.new("RGBA", (1, s))
    top, bottom = (88, 86, 214), (0, 122, 255)
    for y in range(s):
        t = y / (s - 1)
        grad.putpixel((0, y), tuple(round(a + (b - a) * t) for a, b in zip(top, bottom)) + (255,))
    grad = grad.resize((s, s))
    mask = Image.new("L", (s, s), 0)
    ImageDraw.Draw(mask).rounded_rectangle((inset, inset, s - inset, s - inset), radius=s * 185 // 1024, fill=255)
    bg.paste(grad, (0, 0), mask)
    img = Image.alpha_composite(img, bg)
    d = ImageDraw.Draw(img)
    u = s / 1024
    bubble(d, (250 * u, 300 * u, 774 * u, 650 * u), radius=120 * u, tail=110 * u, fill=(255, 255, 255, 255))
    # Three dots: a message being written.
    for i in range(3):
        cx, cy, r = (390 + i * 122) * u, 475 * u, 36 * u
        d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=(0, 104, 230, 255))
    spark(d, 770 * u, 300 * u, 120 * u, fill=(255, 214, 10, 255))
    return img.resize((size, size), Image.LANCZOS)


def tray_template(size):
    """Black and alpha only, as macOS template images must be: the menu bar tints it."""
    s = size * SS
    img = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    u = s / 22
    line = round(1.7 * u)
    bubble(d, (2 * u, 4 * u, 18 * u, 15.5 * u), radius=3.6 * u, tail=3.2 * u, outline=(0, 0, 0, 255), width=line)
    for i in range(3):
        cx, cy, r = (6.4 + i * 3.6) * u, 9.75 * u, 1.05 * u
        d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=(0, 0, 0, 255))
    # The spark sits on the bubble's corner; clear a ring around it so it reads apart.
    d.ellipse((14.2 * u, 0, 22 * u, 7.8 * u), fill=(0, 0, 0, 0))
    spark(d, 18.1 * u, 3.9 * u, 3.7 * u, fill=(0, 0, 0, 255))
    out = img.resize((size, size), Image.LANCZOS)
    # Keep it strictly black: only the alpha channel carries the shape.
    alpha = out.getchannel("A")
    black = Image.new("RGBA", (size, size), (0, 0, 0, 255))
    black.putalpha(alpha)
    return black


def main():
    big = app_icon(1024)
    big.save(HERE / "icon.png", optimize=True)
    for name, px in [("32x32.png", 32), ("128x128.png", 128), ("128x128@2x.png", 256), ("512x512.png", 512)]:
        app_icon(px).save(HERE / name, optimize=True)
    big.save(HERE / "icon.icns", sizes=[(16, 16), (32, 32), (64, 64), (128, 128), (256, 256), (512, 512), (1024, 1024)])
    tray_template(22).save(HERE / "tray-template.png", optimize=True)
    tray_template(44).save(HERE / "tray-template@2x.png", optimize=True)


if __name__ == "__main__":
    main()
