"""Files and folders written under temporary names, made durable together, then put in place.

A commit writes thousands of small local files: each domain's layout folder and its vector
blocks (~1,800 for the EManual build's 33 domains). Made durable one folder at a time they took
an ``fsync`` each (0.6 s of a 3.3 s commit on 2 cores). Gathered here they take one ``syncfs``
(:func:`~vdgr_core.store.location.make_durable`), and only then is anything renamed into place:
blocks first, then the layout folders that name them. A crash before that leaves temporary
files and folders only (``vdgr gc`` removes them); an error discards them at once.
"""
from __future__ import annotations

import os
import shutil
from typing import Callable, Optional

from vdgr_core.store.location import fsync_folder, make_durable


class PendingPublish:
    """What :meth:`publish` puts in place, in the order added: files (renamed, then their
    folders' entries made durable) before folders (each by its own ``publish`` callable).

    Use as a context manager: a block that ends normally publishes; one that raises discards.
    """

    def __init__(self):
        self._files: list[tuple[str, str]] = []                          # temporary -> final
        self._folders: list[tuple[str, list[str], Callable[[], None]]] = []

    def add_file(self, temp: str, final: str) -> None:
        """``temp``, written whole, becomes ``final`` (same folder) at :meth:`publish`."""
        self._files.append((temp, final))

    def add_folder(self, temp_folder: str, files: list[str], publish: Callable[[], None]) -> None:
        """``temp_folder``, holding ``files`` written whole, is put in place by ``publish()``
        (which removes or renames ``temp_folder``) once everything added is durable."""
        self._folders.append((temp_folder, list(files), publish))

    def __len__(self) -> int:
        return len(self._files) + sum(len(files) for _, files, _ in self._folders)

    def publish(self) -> None:
        """Make every added file durable (one ``syncfs`` when there are many), then rename the
        files into place and publish the folders."""
        paths = [temp for temp, _ in self._files] + [p for _, files, _ in self._folders for p in files]
        folders = sorted({os.path.dirname(temp) for temp, _ in self._files} | {f for f, _, _ in self._folders})
        if paths:
            make_durable(paths, folders)
        for temp, final in self._files:
            os.replace(temp, final)
        for folder in sorted({os.path.dirname(final) for _, final in self._files}):
            fsync_folder(folder)
        self._files = []
        while self._folders:
            _, _, publish = self._folders[0]
            publish()
            self._folders.pop(0)

    def discard(self) -> None:
        """Remove every temporary file and folder not yet in place."""
        for temp, _ in self._files:
            if os.path.exists(temp):
                os.unlink(temp)
        for folder, _, _ in self._folders:
            shutil.rmtree(folder, ignore_errors=True)
        self._files, self._folders = [], []

    def __enter__(self) -> "PendingPublish":
        return self

    def __exit__(self, exc_type, _exc, _tb) -> Optional[bool]:
        if exc_type is None:
            try:
                self.publish()
            except BaseException:
                self.discard()
                raise
        else:
            self.discard()
        return None


__all__ = ["PendingPublish"]
