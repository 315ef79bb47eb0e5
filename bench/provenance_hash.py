"""How long the task content hash of provenance takes on a large task folder.

    python bench/provenance_hash.py [--mb 1024] [--small 5000] [--cold]

Writes a folder of a few large data files (`--mb` in all) and many small source files
(`--small`), then times `folder_hash` on it: the first run after the files were written
(in the page cache: what a task folder that was just copied sees) and, with `--cold` where
this process may drop the page cache (root; it slows the whole machine for a moment), a
run read from disk. Prints MB/s and files/s. Figures, not limits: nothing here asserts a
time.

On a 2-core cloud VM (2025): 1 GB in 5,000 files took 1.1 s from the page cache (910
MB/s) and 4.3 s cold (240 MB/s).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import _checkout_venv  # noqa: F401  (first: runs this script in the checkout's .venv)

from labcoat.families._provenance_hash import clear_folder_hashes, folder_hash

BIG_FILES = 4


def make_folder(root: Path, mb: int, small: int) -> None:
    block = os.urandom(1 << 20)
    for i in range(BIG_FILES):
        with open(root / f"data{i}.bin", "wb") as f:
            for _ in range(mb // BIG_FILES):
                f.write(block)
    for i in range(small):
        sub = root / "src" / f"pkg{i // 100}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"m{i}.py").write_text(f"x = {i}\n" * 40)


def drop_caches() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def timed(root: Path) -> tuple[float, int, int]:
    clear_folder_hashes()
    start = time.perf_counter()
    info = folder_hash(str(root))
    return time.perf_counter() - start, info.files, info.bytes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=1024, help="MB of large data files")
    parser.add_argument("--small", type=int, default=5000, help="small source files")
    parser.add_argument("--cold", action="store_true", help="also time a run from disk")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="labcoat-bench-hash-") as tmp:
        root = Path(tmp)
        make_folder(root, args.mb, args.small)
        runs = [("cached", *timed(root))]
        if args.cold and drop_caches():
            runs.append(("cold", *timed(root)))
        for label, seconds, files, size in runs:
            mb = size / 2**20
            print(
                f"{label:7} {files:6} files {mb:8.1f} MB  {seconds:6.2f} s  "
                f"{mb / seconds:7.1f} MB/s  {files / seconds:8.0f} files/s"
            )


if __name__ == "__main__":
    main()
