"""Makes python/ladle/data/photos, the demo's photographs, from the Debian
packages' files under ROOT (default: /work/shared/data/bench-photos/root):
each photo scaled to 400 pixels on its longer side and saved as a JPEG
(quality 85); their licences are in python/ladle/data/photos/COPYRIGHT.

    /usr/bin/python3 tools/make_demo_photos.py [ROOT]
"""

import os
import sys

from PIL import Image

# class folder -> (path under ROOT/usr/share, Debian package)
PHOTOS = {
    "landscape": [
        ("backgrounds/aitzgorri_by_Aitzol_Berasategi.jpg", "lomiri-wallpapers"),
        ("backgrounds/picosdeeuropa_by_Aitzol_Berasategi.jpg", "lomiri-wallpapers"),
        ("backgrounds/sunset_by_Aitzol_Berasategi.jpg", "lomiri-wallpapers"),
        ("backgrounds/life_by_Aitzol_Berasategi.jpg", "lomiri-wallpapers"),
        ("doc/libjs-jquery-backstretch/examples/sample2_1920.jpg", "libjs-jquery-backstretch"),
    ],
    "close_up": [
        ("backgrounds/Picture_0B_by_freespace.jpg", "lomiri-wallpapers"),
        ("backgrounds/Picture_1A_by_freespace.jpg", "lomiri-wallpapers"),
        ("backgrounds/seeding_by_Clements_Engelhardt.jpg", "lomiri-wallpapers"),
        ("backgrounds/Wine_by_Jakkub_Mede.jpg", "lomiri-wallpapers"),
        ("backgrounds/friends_by_Aitzol_Berasategi.jpg", "lomiri-wallpapers"),
        ("doc/libjs-jquery-backstretch/examples/coffee.jpg", "libjs-jquery-backstretch"),
        ("doc/libjs-jquery-backstretch/examples/sample1_1920.jpg", "libjs-jquery-backstretch"),
    ],
}
SIDE = 400


def main(root):
    out = os.path.join(os.path.dirname(__file__), "..", "python", "ladle", "data", "photos")
    for label, photos in PHOTOS.items():
        os.makedirs(os.path.join(out, label), exist_ok=True)
        for rel, _ in photos:
            im = Image.open(os.path.join(root, "usr", "share", rel)).convert("RGB")
            im.thumbnail((SIDE, SIDE), Image.LANCZOS)
            im.save(os.path.join(out, label, os.path.basename(rel)), quality=85, optimize=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data/bench-photos/root")
