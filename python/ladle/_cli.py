"""Argument types shared by the command-line tools (python -m ladle.demo,
python -m ladle.bench): a bad value is a usage error naming the argument,
not a traceback."""

import argparse
import os


def int_at_least(low):
    """An argparse type: an integer >= low."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is not >= {low}")
        return value
    parse.__name__ = f"integer >= {low}"
    return parse


def image_folder(text):
    """An argparse type: an existing directory (fn.readers.file's file_root)."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    return text
